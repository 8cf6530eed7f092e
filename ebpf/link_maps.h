/* The link model's maps that the PFC qdisc (pfc_qdisc.bpf.c) shares with the egress program
 * (link_shaper.bpf.c): one declaration for both objects, so that user space can hand the
 * qdisc the lab's own (bpf_map__reuse_fd needs the same type, sizes and flags). BPF only. */
#ifndef FABEMU_EBPF_LINK_MAPS_H_
#define FABEMU_EBPF_LINK_MAPS_H_

#include <bpf/bpf_helpers.h>

#include "link_shaper.h"

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FABEMU_MAX_LINKS);
  __type(key, __u32);
  __type(value, struct fabemu_link_cfg);
} fabemu_cfg SEC(".maps");

/* Per-CPU so that the hot path never contends on counters. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, FABEMU_MAX_LINKS);
  __type(key, __u32);
  __type(value, struct fabemu_link_counters);
} fabemu_counters SEC(".maps");

/* PFC: the buffer each switch holds for the lossless frames that came in over one port. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FABEMU_MAX_LINKS);
  __type(key, __u32);
  __type(value, struct fabemu_pfc_cfg);
} fabemu_pfc_cfg SEC(".maps");

#endif /* FABEMU_EBPF_LINK_MAPS_H_ */
