// SPDX-License-Identifier: GPL-2.0
/* PFC that holds frames in the port's queue: a BPF qdisc (struct_ops Qdisc_ops, Linux 6.16+
 * with CONFIG_NET_SCH_BPF) for labs whose lossless class says `hold: queue`. The link model's
 * egress program still decides rate, delay, loss and ECN and stamps each frame's departure
 * (EDT); it marks the frames of the lossless class. This qdisc then keeps two FIFOs per port,
 * the lossless class and the rest, and releases a frame when its departure has come, except
 * that the lossless FIFO is not served while the far end's buffer for this link is over Xoff
 * (still over Xon after a pause). Buffers are real here: the bytes of lossless frames that came
 * in over a port and still sit in this node's queues. A held frame has no departure until the
 * far end drains, so a cyclic buffer dependency deadlocks as it does in a real fabric; the PFC
 * watchdog (a pause longer than its limit) drops the class's queued frames and breaks it.
 *
 * Built against hand-written declarations of the few kernel types it touches, relocated by
 * CO-RE against the running kernel's BTF: no vmlinux.h from the build machine (whose kernel
 * may have no BPF qdiscs at all). */
#include <linux/bpf.h>
#include <linux/types.h>

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "link_maps.h" /* the link model's maps, reused from the lab's by user space */
#include "link_shaper.h"

#define NET_XMIT_SUCCESS 0
#define NET_XMIT_DROP 1
#define NS_PER_SEC_BITS 8000000000ULL

/* The kernel's types, as far as this program reads them (CO-RE finds the fields). */
#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)
struct net_device {
  int ifindex;
};
struct netdev_queue {
  struct net_device* dev;
};
struct qdisc_skb_head {
  __u32 qlen;
};
struct gnet_stats_queue {
  __u32 backlog;
  __u32 drops;
};
struct Qdisc {
  __u32 limit;
  struct netdev_queue* dev_queue;
  struct qdisc_skb_head q;
  struct gnet_stats_queue qstats;
};
struct sk_buff {
  unsigned int len;
  __u32 mark;
  int skb_iif;
  __u64 tstamp;
};
struct bpf_sk_buff_ptr {
  struct sk_buff* skb;
};
#pragma clang attribute pop

/* The BPF graph types (not in Linux 6.1's uapi headers, which the build uses). */
struct bpf_list_head {
  __u64 __opaque[2];
} __attribute__((aligned(8)));
struct bpf_list_node {
  __u64 __opaque[3];
} __attribute__((aligned(8)));

#define __contains(name, node) __attribute__((btf_decl_tag("contains:" #name ":" #node)))

extern void* bpf_obj_new_impl(__u64 local_type_id, void* meta) __ksym;
extern void bpf_obj_drop_impl(void* kptr, void* meta) __ksym;
extern int bpf_list_push_front_impl(struct bpf_list_head* head, struct bpf_list_node* node,
                                    void* meta, __u64 off) __ksym;
extern int bpf_list_push_back_impl(struct bpf_list_head* head, struct bpf_list_node* node,
                                   void* meta, __u64 off) __ksym;
extern struct bpf_list_node* bpf_list_pop_front(struct bpf_list_head* head) __ksym;
extern void bpf_qdisc_skb_drop(struct sk_buff* skb, struct bpf_sk_buff_ptr* to_free) __ksym;
extern void bpf_kfree_skb(struct sk_buff* skb) __ksym;
extern void bpf_qdisc_watchdog_schedule(struct Qdisc* sch, __u64 expire, __u64 delta_ns) __ksym;
extern void bpf_qdisc_bstats_update(struct Qdisc* sch, const struct sk_buff* skb) __ksym;

/* Open-coded loops (Linux 6.4+): the verifier checks the body once, whatever the count. */
struct bpf_iter_num {
  __u64 __opaque[1];
} __attribute__((aligned(8)));
extern int bpf_iter_num_new(struct bpf_iter_num* it, int start, int end) __ksym;
extern int* bpf_iter_num_next(struct bpf_iter_num* it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num* it) __ksym;

#define obj_new(type) ((type*)bpf_obj_new_impl(bpf_core_type_id_local(type), 0))
#define obj_drop(p) bpf_obj_drop_impl(p, 0)
#define push_front(head, node) bpf_list_push_front_impl(head, node, 0, 0)
#define push_back(head, node) bpf_list_push_back_impl(head, node, 0, 0)

/* One queued frame. */
struct frame {
  struct sk_buff __kptr* skb;
  struct bpf_list_node node;
  __u64 depart; /* the link model's departure time (0: at once) */
  __u32 in;     /* the ingress port whose PFC buffer the frame occupies (0: none) */
  __u32 wire;   /* its bytes in that buffer */
};

/* A port's queues and pause state, keyed by the port's (lab-unique) ifindex. */
struct port_q {
  struct bpf_spin_lock lock;
  struct bpf_list_head lossless __contains(frame, node);
  struct bpf_list_head other __contains(frame, node);
  __u64 ll_free;     /* the class's clock: a frame released after a pause waits for the last */
  __u64 paused;      /* 1 from the far end's Xoff until its Xon */
  __u64 pause_since; /* when the current pause began */
  __u64 pause_seen;  /* pause time counted up to here */
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FABEMU_MAX_LINKS);
  __type(key, __u32);
  __type(value, struct port_q);
} fabemu_pfcq_ports SEC(".maps");

/* The buffers: lossless bytes queued on this node that came in over the key's port. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FABEMU_MAX_LINKS);
  __type(key, __u32);
  __type(value, __u64);
} fabemu_pfcq_buffer SEC(".maps");

/* How long a paused port waits before it looks at the far end's buffer again (a switch
 * refreshes PAUSE the same way), at most: the slot of the PFC config when shorter. */
#define PAUSE_POLL_NS 100000ULL
/* Frames dropped per dequeue by the watchdog (the rest on the next call, at once). */
#define WATCHDOG_BATCH 64

static __always_inline __u32 port_key(struct Qdisc* sch) {
  return (__u32)BPF_CORE_READ(sch, dev_queue, dev, ifindex);
}

static __always_inline struct port_q* port_of(__u32 key) {
  struct port_q* p = bpf_map_lookup_elem(&fabemu_pfcq_ports, &key);
  if (p) return p;
  struct port_q zero = {};
  bpf_map_update_elem(&fabemu_pfcq_ports, &key, &zero, BPF_NOEXIST);
  return bpf_map_lookup_elem(&fabemu_pfcq_ports, &key);
}

static __always_inline void buffer_add(__u32 in, __s64 bytes) {
  if (!in) return;
  __u64* b = bpf_map_lookup_elem(&fabemu_pfcq_buffer, &in);
  if (!b) {
    __u64 zero = 0;
    bpf_map_update_elem(&fabemu_pfcq_buffer, &in, &zero, BPF_NOEXIST);
    b = bpf_map_lookup_elem(&fabemu_pfcq_buffer, &in);
    if (!b) return;
  }
  __sync_fetch_and_add(b, bytes);
}

static __always_inline __u64 buffer_of(__u32 in) {
  __u64* b = bpf_map_lookup_elem(&fabemu_pfcq_buffer, &in);
  return b ? *b : 0;
}

SEC("struct_ops")
int BPF_PROG(fabemu_pfcq_enqueue, struct sk_buff* skb, struct Qdisc* sch,
             struct bpf_sk_buff_ptr* to_free) {
  const __u32 key = port_key(sch);
  struct port_q* p = port_of(key);
  struct fabemu_link_counters* cnt = bpf_map_lookup_elem(&fabemu_counters, &key);
  const int ll = (skb->mark & FABEMU_LOSSLESS_MARK) != 0;
  const __u32 in = ll && skb->skb_iif > 0 ? (__u32)skb->skb_iif : 0;
  struct fabemu_pfc_cfg* guard = in ? bpf_map_lookup_elem(&fabemu_pfc_cfg, &in) : 0;
  const int guarded = guard && guard->xoff_bytes;
  /* A lossless frame in a buffer that PFC guards is never dropped for want of room: its
   * sender is paused instead. Everything else meets the queue's limit. */
  if (!p || (!guarded && sch->q.qlen >= sch->limit)) goto drop;
  struct frame* f = obj_new(struct frame);
  if (!f) goto drop;
  const __u32 len = skb->len;
  f->depart = skb->tstamp;
  f->in = guarded ? in : 0;
  f->wire = len;
  struct sk_buff* old = bpf_kptr_xchg(&f->skb, skb);
  if (old) bpf_qdisc_skb_drop(old, to_free);
  if (guarded) buffer_add(in, len);
  bpf_spin_lock(&p->lock);
  if (ll)
    push_back(&p->lossless, &f->node);
  else
    push_back(&p->other, &f->node);
  bpf_spin_unlock(&p->lock);
  sch->q.qlen++;
  sch->qstats.backlog += len;
  return NET_XMIT_SUCCESS;
drop:
  if (cnt) {
    cnt->drop_queue++;
    cnt->lossless_drops += ll;
  }
  bpf_qdisc_skb_drop(skb, to_free);
  sch->qstats.drops++;
  /* The port's own queue is full: told to a local sender, as any qdisc does (wire_drop() in
   * link_shaper.bpf.c says why). */
  return NET_XMIT_DROP;
}

/* Takes the frame out of its node, and its bytes out of its buffer. */
static __always_inline struct sk_buff* unwrap(struct frame* f) {
  struct sk_buff* skb = bpf_kptr_xchg(&f->skb, 0);
  buffer_add(f->in, -(__s64)f->wire);
  obj_drop(f);
  return skb;
}

/* Whether the lossless class of port `key` is paused now: the far end's buffer for this link
 * over Xoff, or still over Xon since it was. Counts the pause time and the XOFFs. */
static __always_inline int pause_state(struct port_q* p, const struct fabemu_link_cfg* cfg,
                                       struct fabemu_link_counters* cnt, __u64 now) {
  int paused = 0;
  if (cfg && cfg->pfc_peer && cfg->pfc_xoff_bytes) {
    const __u64 occ = buffer_of(cfg->pfc_peer);
    paused = occ >= cfg->pfc_xoff_bytes || (p->paused && occ > cfg->pfc_xon_bytes);
  }
  if (paused && !p->paused) {
    p->pause_since = p->pause_seen = now;
    if (cnt) cnt->pause_events++;
  }
  if (p->paused && cnt && now > p->pause_seen) cnt->pause_ns += now - p->pause_seen;
  p->pause_seen = now;
  p->paused = paused;
  return paused;
}

SEC("struct_ops")
struct sk_buff* BPF_PROG(fabemu_pfcq_dequeue, struct Qdisc* sch) {
  const __u32 key = port_key(sch);
  struct port_q* p = bpf_map_lookup_elem(&fabemu_pfcq_ports, &key);
  if (!p || !sch->q.qlen) return 0;
  struct fabemu_link_cfg* cfg = bpf_map_lookup_elem(&fabemu_cfg, &key);
  struct fabemu_link_counters* cnt = bpf_map_lookup_elem(&fabemu_counters, &key);
  const __u64 now = bpf_ktime_get_ns();
  const int paused = pause_state(p, cfg, cnt, now);
  const __u64 watchdog = cfg ? cfg->pfc_watchdog_ns : 0;
  struct bpf_list_node* n;
  struct frame* f;
  struct sk_buff* skb;
  __u64 wake = 0;

  int held = 0;

  if (paused && watchdog && now - p->pause_since > watchdog) {
    /* Stuck longer than the watchdog allows: the class's queued frames are dropped. */
    struct bpf_iter_num it;
    bpf_iter_num_new(&it, 0, WATCHDOG_BATCH);
    while (bpf_iter_num_next(&it)) {
      bpf_spin_lock(&p->lock);
      n = bpf_list_pop_front(&p->lossless);
      bpf_spin_unlock(&p->lock);
      if (!n) break;
      f = container_of(n, struct frame, node);
      skb = unwrap(f);
      if (!skb) continue;
      sch->q.qlen--;
      sch->qstats.backlog -= skb->len;
      sch->qstats.drops++;
      if (cnt) {
        cnt->drop_watchdog++;
        cnt->lossless_drops++;
      }
      bpf_kfree_skb(skb);
    }
    bpf_iter_num_destroy(&it);
  }

  /* The lossless class first when it may go and its frame is due. */
  bpf_spin_lock(&p->lock);
  n = bpf_list_pop_front(&p->lossless);
  bpf_spin_unlock(&p->lock);
  if (n) {
    f = container_of(n, struct frame, node);
    __u64 at = f->depart > p->ll_free ? f->depart : p->ll_free;
    if (!paused && at <= now) {
      __u64 rate = cfg ? cfg->rate_bps : 0;
      __u64 tx =
          rate ? ((__u64)f->wire + (cfg ? cfg->overhead_bytes : 0)) * NS_PER_SEC_BITS / rate : 0;
      p->ll_free = (at > now - tx ? at : now - tx) + tx; /* catches up one frame at most */
      skb = unwrap(f);
      if (skb) goto out;
    } else {
      if (!paused) wake = at;
      held = paused;
      bpf_spin_lock(&p->lock);
      push_front(&p->lossless, &f->node);
      bpf_spin_unlock(&p->lock);
    }
  }
  bpf_spin_lock(&p->lock);
  n = bpf_list_pop_front(&p->other);
  bpf_spin_unlock(&p->lock);
  if (n) {
    f = container_of(n, struct frame, node);
    if (f->depart <= now) {
      skb = unwrap(f);
      if (skb) goto out;
    } else {
      if (!wake || f->depart < wake) wake = f->depart;
      bpf_spin_lock(&p->lock);
      push_front(&p->other, &f->node);
      bpf_spin_unlock(&p->lock);
    }
  }
  if (held) {
    __u64 poll = cfg && cfg->pfc_slot_ns && cfg->pfc_slot_ns < PAUSE_POLL_NS ? cfg->pfc_slot_ns
                                                                             : PAUSE_POLL_NS;
    if (!wake || now + poll < wake) wake = now + poll;
  }
  if (wake) bpf_qdisc_watchdog_schedule(sch, wake, 0);
  return 0;
out:
  sch->q.qlen--;
  sch->qstats.backlog -= skb->len;
  bpf_qdisc_bstats_update(sch, skb);
  return skb;
}

SEC("struct_ops")
int BPF_PROG(fabemu_pfcq_init, struct Qdisc* sch, void* opt, void* extack) {
  sch->limit = 10000;
  return 0;
}

/* Frees every queued frame of the port (its bytes leave their buffers). */
static __always_inline void flush(struct Qdisc* sch) {
  const __u32 key = port_key(sch);
  struct port_q* p = bpf_map_lookup_elem(&fabemu_pfcq_ports, &key);
  if (!p) return;
  struct bpf_iter_num it;
  bpf_iter_num_new(&it, 0, 1 << 20);
  while (bpf_iter_num_next(&it)) {
    bpf_spin_lock(&p->lock);
    struct bpf_list_node* n = bpf_list_pop_front(&p->lossless);
    if (!n) n = bpf_list_pop_front(&p->other);
    bpf_spin_unlock(&p->lock);
    if (!n) break;
    struct sk_buff* skb = unwrap(container_of(n, struct frame, node));
    if (skb) bpf_kfree_skb(skb);
  }
  bpf_iter_num_destroy(&it);
  p->paused = 0;
  sch->q.qlen = 0;
  sch->qstats.backlog = 0;
}

SEC("struct_ops")
void BPF_PROG(fabemu_pfcq_reset, struct Qdisc* sch) {
  flush(sch);
}

SEC("struct_ops")
void BPF_PROG(fabemu_pfcq_destroy, struct Qdisc* sch) {
  flush(sch);
}

/* Qdisc_ops as far as this program fills it. `id` is the qdisc's kind for tc; user space
 * replaces this placeholder with a name of the lab's own (kinds are global to the kernel). */
struct Qdisc_ops {
  char id[16];
  int (*enqueue)(struct sk_buff*, struct Qdisc*, struct bpf_sk_buff_ptr*);
  struct sk_buff* (*dequeue)(struct Qdisc*);
  int (*init)(struct Qdisc*, void*, void*);
  void (*reset)(struct Qdisc*);
  void (*destroy)(struct Qdisc*);
};

SEC(".struct_ops")
struct Qdisc_ops fabemu_pfcq = {
    .id = FABEMU_PFCQ_ID_PLACEHOLDER,
    .enqueue = (void*)fabemu_pfcq_enqueue,
    .dequeue = (void*)fabemu_pfcq_dequeue,
    .init = (void*)fabemu_pfcq_init,
    .reset = (void*)fabemu_pfcq_reset,
    .destroy = (void*)fabemu_pfcq_destroy,
};

char LICENSE[] SEC("license") = "GPL";
