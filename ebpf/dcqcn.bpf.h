/* DCQCN for soft-RoCE (ebpf/dcqcn.h): the notification point at a host port's ingress
 * (fabemu_roce_in: CE-marked RoCEv2 frames answered with CNPs; CNPs for this host's QPs taken
 * by its reaction point) and the reaction point's pacing at its egress (dcqcn_egress, called by
 * the link model for ports with FABEMU_LINK_DCQCN). Included by link_shaper.bpf.c before the
 * link model's program. BPF only. */
#ifndef FABEMU_EBPF_DCQCN_BPF_H_
#define FABEMU_EBPF_DCQCN_BPF_H_

#include "dcqcn.h"

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FABEMU_MAX_LINKS);
  __type(key, __u32);
  __type(value, struct fabemu_dcqcn_cfg);
} fabemu_dcqcn_cfg SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FABEMU_DCQCN_MAX_QPS);
  __type(key, struct fabemu_dcqcn_key);
  __type(value, struct fabemu_dcqcn_qp);
} fabemu_dcqcn_qps SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FABEMU_DCQCN_MAX_QPS);
  __type(key, struct fabemu_dcqcn_key);
  __type(value, struct fabemu_dcqcn_np);
} fabemu_dcqcn_np SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, FABEMU_MAX_LINKS);
  __type(key, __u32);
  __type(value, struct fabemu_dcqcn_counters);
} fabemu_dcqcn_counters SEC(".maps");

/* Zeroes to start a QP's state or a port's counters from: a struct on the stack of the egress
 * path (fabemu_shape -> dcqcn_egress -> the rate machine) would push its combined stack over
 * the 512 bytes Linux 6.1 allows. Never written. */
struct fabemu_dcqcn_zero {
  __u8 bytes[sizeof(struct fabemu_dcqcn_qp)];
};
_Static_assert(sizeof(struct fabemu_dcqcn_counters) <= sizeof(struct fabemu_dcqcn_zero),
               "the zeroes cover the counters");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct fabemu_dcqcn_zero);
} fabemu_dcqcn_zero SEC(".maps");

static __always_inline const void* dcqcn_zeroes(void) {
  __u32 k = 0;
  return bpf_map_lookup_elem(&fabemu_dcqcn_zero, &k);
}

/* What a RoCEv2 frame says of itself: IPv4 without options (rxe sends none), UDP to 4791. */
struct roce_frame {
  __u32 saddr, daddr; /* network order */
  __u32 qpn;          /* the BTH's destination QP */
  __u8 tos, opcode;
};

/* A global function: its header bytes stay off the stack of the egress path's deepest call
 * chain (Linux 6.1 holds the chain to 512 bytes). */
__attribute__((noinline)) int parse_roce(struct __sk_buff* skb, struct roce_frame* r) {
  if (!skb || !r) return 0;
  __u8 h[20 + 8 + 12];
  if (skb->protocol != bpf_htons(ETH_P_IP)) return 0;
  if (bpf_skb_load_bytes(skb, ETH_HLEN, h, sizeof(h))) return 0;
  if (h[0] != 0x45 || h[9] != IPPROTO_UDP || ((h[6] & 0x3f) | h[7])) return 0; /* fragments */
  if (((__u32)h[22] << 8 | h[23]) != FABEMU_ROCEV2_PORT) return 0;
  __builtin_memcpy(&r->saddr, h + 12, 4);
  __builtin_memcpy(&r->daddr, h + 16, 4);
  r->tos = h[1];
  r->opcode = h[28];
  r->qpn = (__u32)h[33] << 16 | (__u32)h[34] << 8 | h[35];
  return 1;
}

static __always_inline struct fabemu_dcqcn_counters* dcqcn_counters_of(__u32 key) {
  struct fabemu_dcqcn_counters* c = bpf_map_lookup_elem(&fabemu_dcqcn_counters, &key);
  if (c) return c;
  const void* zero = dcqcn_zeroes();
  if (!zero) return 0;
  bpf_map_update_elem(&fabemu_dcqcn_counters, &key, zero, BPF_NOEXIST);
  return bpf_map_lookup_elem(&fabemu_dcqcn_counters, &key);
}

/* The reaction point's state of a QP, made on its first frame or CNP (0 when the map is full:
 * the QP then sends at the line rate, as the counters' `untracked` says). */
static __always_inline struct fabemu_dcqcn_qp* dcqcn_qp_of(__u32 ifindex, __u32 peer, __u32 qpn) {
  struct fabemu_dcqcn_key k = {ifindex, peer, qpn, 0};
  struct fabemu_dcqcn_qp* q = bpf_map_lookup_elem(&fabemu_dcqcn_qps, &k);
  if (q) return q;
  const void* zero = dcqcn_zeroes();
  if (!zero) return 0;
  bpf_map_update_elem(&fabemu_dcqcn_qps, &k, zero, BPF_NOEXIST);
  return bpf_map_lookup_elem(&fabemu_dcqcn_qps, &k);
}

/* A Not-ECT frame (TOS `tos`) made ECT(0): the TOS byte and the header checksum, as one 16-bit
 * word with version/IHL. A global function, off the egress path's stack like parse_roce. */
__attribute__((noinline)) int make_ect(struct __sk_buff* skb, __u32 tos) {
  if (!skb) return 0;
  __u8 ect = (__u8)(tos | 2);
  bpf_l3_csum_replace(skb, ETH_HLEN + 10, bpf_htons(0x4500 | (tos & 0xff)), bpf_htons(0x4500 | ect),
                      2);
  return bpf_skb_store_bytes(skb, ETH_HLEN + 1, &ect, 1, 0);
}

/* The reaction point at a host port's egress: when a RoCEv2 data frame of `wire` bytes may
 * leave by its QP's rate (0: not paced). The frame is made ECN-capable (ECT(0)), as a NIC with
 * DCQCN sends RoCE (rxe sends Not-ECT). The QP's state is not locked: rxe sends a QP's frames
 * from one context at a time, and a CNP racing a frame may be seen one frame late. */
__attribute__((noinline)) __u64 dcqcn_egress(struct __sk_buff* skb, __u32 key, __u64 now,
                                             __u64 wire) {
  if (!skb) return 0;
  struct fabemu_dcqcn_cfg* c = bpf_map_lookup_elem(&fabemu_dcqcn_cfg, &key);
  struct roce_frame r = {}; /* Linux 6.1 reads what a global function is handed */
  if (!c || !parse_roce(skb, &r) || r.opcode == FABEMU_BTH_OP_CNP) return 0;
  if (!(r.tos & 3)) make_ect(skb, r.tos);
  struct fabemu_dcqcn_qp* q = dcqcn_qp_of(key, r.daddr, r.qpn);
  struct fabemu_dcqcn_counters* cnt = dcqcn_counters_of(key);
  if (!q) {
    if (cnt) cnt->untracked++;
    return 0;
  }
  __u64 at = fabemu_dcqcn_pace(c, q, now, wire);
  if (cnt && at > now) cnt->paced++;
  return at;
}

/* One's-complement sum of the IPv4 header in `h` (20 bytes), folded. */
static __always_inline __u16 ipv4_checksum(const __u8* h) {
  __u32 sum = 0;
  for (int i = 0; i < 20; i += 2) sum += (__u32)h[i] << 8 | h[i + 1];
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return (__u16)~sum;
}

#define FABEMU_CNP_BYTES (ETH_HLEN + 20 + 8 + 12 + 16 + 4) /* ..., BTH, reserved, ICRC */

/* The clone of a CE-marked frame, back at the ingress (FABEMU_CNP_MARK): made into the CNP that
 * answers it (addresses swapped, BTH opcode 0x81 to the QP the frame named, BECN set, DSCP kept,
 * Not-ECT, ICRC left 0) and sent out of the port it came in on. */
__attribute__((noinline)) int dcqcn_send_cnp(struct __sk_buff* skb) {
  if (!skb) return TC_ACT_SHOT;
  skb->mark &= ~FABEMU_CNP_MARK;
  __u8 in[ETH_HLEN + 20 + 8 + 12];
  if (bpf_skb_load_bytes(skb, 0, in, sizeof(in))) return TC_ACT_SHOT;
  __u8 out[FABEMU_CNP_BYTES];
  __builtin_memset(out, 0, sizeof(out));
  __builtin_memcpy(out, in + 6, 6); /* back to where the frame came from */
  __builtin_memcpy(out + 6, in, 6);
  out[12] = 0x08; /* IPv4 */
  __u8* ip = out + ETH_HLEN;
  ip[0] = 0x45;
  ip[1] = in[ETH_HLEN + 1] & 0xfc;
  ip[3] = FABEMU_CNP_BYTES - ETH_HLEN;
  ip[6] = 0x40; /* DF */
  ip[8] = 64;
  ip[9] = IPPROTO_UDP;
  __builtin_memcpy(ip + 12, in + ETH_HLEN + 16, 4);
  __builtin_memcpy(ip + 16, in + ETH_HLEN + 12, 4);
  __u16 sum = ipv4_checksum(ip);
  ip[10] = sum >> 8;
  ip[11] = sum & 0xff;
  __u8* udp = ip + 20;
  udp[0] = in[ETH_HLEN + 20];
  udp[1] = in[ETH_HLEN + 21];
  udp[2] = FABEMU_ROCEV2_PORT >> 8;
  udp[3] = FABEMU_ROCEV2_PORT & 0xff;
  udp[5] = FABEMU_CNP_BYTES - ETH_HLEN - 20;
  __u8* bth = udp + 8;
  bth[0] = FABEMU_BTH_OP_CNP;
  bth[2] = 0xff; /* the default P_Key */
  bth[3] = 0xff;
  bth[4] = 0x40; /* BECN */
  __builtin_memcpy(bth + 5, in + ETH_HLEN + 20 + 8 + 5, 3);
  if (bpf_skb_change_tail(skb, FABEMU_CNP_BYTES, 0)) return TC_ACT_SHOT;
  if (bpf_skb_store_bytes(skb, 0, out, sizeof(out), 0)) return TC_ACT_SHOT;
  return bpf_redirect(skb->ifindex, 0);
}

/* A host port's ingress, where the lab runs DCQCN: the notification point answers CE-marked
 * RoCEv2 frames with a CNP (at most one per QP per cnp_interval), and the reaction point takes
 * the CNPs for this host's QPs (the NIC consumes them: rxe never sees them). */
SEC("tc")
int fabemu_roce_in(struct __sk_buff* skb) {
  if (skb->mark & FABEMU_CNP_MARK) return dcqcn_send_cnp(skb);
  __u32 key = skb->ifindex;
  struct fabemu_dcqcn_cfg* c = bpf_map_lookup_elem(&fabemu_dcqcn_cfg, &key);
  struct roce_frame r = {}; /* Linux 6.1 reads what a global function is handed */
  if (!c || !parse_roce(skb, &r)) return TC_ACT_OK;
  struct fabemu_dcqcn_counters* cnt = dcqcn_counters_of(key);
  if (!cnt) return TC_ACT_OK;
  const __u64 now = bpf_ktime_get_ns();
  if (r.opcode == FABEMU_BTH_OP_CNP) {
    cnt->cnps_received++;
    struct fabemu_dcqcn_qp* q = dcqcn_qp_of(key, r.saddr, r.qpn);
    if (q)
      fabemu_dcqcn_cnp(c, q, now);
    else
      cnt->untracked++;
    return TC_ACT_SHOT;
  }
  if ((r.tos & 3) != 3) return TC_ACT_OK;
  cnt->ce_received++;
  struct fabemu_dcqcn_key k = {key, r.saddr, r.qpn, 0};
  struct fabemu_dcqcn_np* np = bpf_map_lookup_elem(&fabemu_dcqcn_np, &k);
  if (np && now - np->last_cnp_ns < c->cnp_interval_ns) {
    cnt->cnps_held++;
    return TC_ACT_OK;
  }
  struct fabemu_dcqcn_np sent = {now};
  bpf_map_update_elem(&fabemu_dcqcn_np, &k, &sent, BPF_ANY);
  skb->mark |= FABEMU_CNP_MARK;
  if (bpf_clone_redirect(skb, key, BPF_F_INGRESS) == 0) cnt->cnps_sent++;
  skb->mark &= ~FABEMU_CNP_MARK;
  return TC_ACT_OK;
}

#endif /* FABEMU_EBPF_DCQCN_BPF_H_ */
