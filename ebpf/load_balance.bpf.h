/* fabemu_balance: a switch port's ingress program choosing among an ECMP route's members by the
 * group's mode (load_balance.h). Part of link_shaper.bpf.c's object, so that it reads the link
 * model's maps (a member's shape and virtual queue) directly; included at its end. BPF only. */
#ifndef FABEMU_EBPF_LOAD_BALANCE_BPF_H_
#define FABEMU_EBPF_LOAD_BALANCE_BPF_H_

#include "load_balance.h"

/* The switch a port belongs to, by the port's ifindex. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FABEMU_MAX_LINKS);
  __type(key, __u32);
  __type(value, __u32);
} fabemu_lb_ports SEC(".maps");

/* A switch's routes with more than one next hop: (switch, prefix) -> group. */
struct {
  __uint(type, BPF_MAP_TYPE_LPM_TRIE);
  __uint(max_entries, FABEMU_LB_MAX_ROUTES);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct fabemu_lb_route_key);
  __type(value, __u32);
} fabemu_lb_routes SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, FABEMU_LB_MAX_GROUPS);
  __type(key, __u32);
  __type(value, struct fabemu_lb_group);
} fabemu_lb_groups SEC(".maps");

/* Each group's frame sequence number, for spraying (one for all CPUs: round robin is global). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, FABEMU_LB_MAX_GROUPS);
  __type(key, __u32);
  __type(value, __u64);
} fabemu_lb_seq SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, FABEMU_LB_MAX_FLOWS);
  __type(key, struct fabemu_lb_flow_key);
  __type(value, struct fabemu_lb_flow);
} fabemu_lb_flows SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, FABEMU_LB_MAX_GROUPS);
  __type(key, __u32);
  __type(value, struct fabemu_lb_counters);
} fabemu_lb_counters SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, FABEMU_LB_MAX_ORDER_FLOWS);
  __type(key, struct fabemu_lb_order_key);
  __type(value, struct fabemu_lb_order);
} fabemu_lb_order SEC(".maps");

/* The fields a frame is hashed on, read with bpf_skb_load_bytes (no bounds to prove). */
struct lb_headers {
  __u8 ver_ihl;
  __u8 tos;
  __u16 tot_len;
  __u16 id;
  __u16 frag;
  __u8 ttl;
  __u8 protocol;
  __u16 check;
  __u32 saddr;
  __u32 daddr;
};

/* The flow's hash under the group's fields and seed: addresses and protocol, the ports with
 * l4, and with qp a RoCEv2 frame's destination QP (BTH bytes 5-7 after the UDP header). */
static __always_inline __u32 lb_hash(struct __sk_buff* skb, const struct lb_headers* ip,
                                     __u32 flags, __u32 seed) {
  __u32 h = mix32(seed ^ ip->saddr);
  h = mix32(h ^ ip->daddr);
  h = mix32(h ^ ip->protocol);
  const __u32 l4 = ETH_HLEN + ((__u32)(ip->ver_ihl & 0xf) << 2);
  const int first = (ip->frag & bpf_htons(0x1fff)) == 0;
  const int ported = ip->protocol == IPPROTO_TCP || ip->protocol == IPPROTO_UDP;
  if (!first || !ported) return h;
  __u32 ports = 0;
  if ((flags & (FABEMU_LB_HASH_L4 | FABEMU_LB_HASH_QP)) &&
      bpf_skb_load_bytes(skb, l4, &ports, sizeof ports) == 0 && (flags & FABEMU_LB_HASH_L4))
    h = mix32(h ^ ports);
  if ((flags & FABEMU_LB_HASH_QP) && ip->protocol == IPPROTO_UDP &&
      (ports >> 16) == bpf_htons(FABEMU_ROCEV2_PORT)) {
    __u32 bth = 0; /* reserved byte and the 24-bit destination QP */
    if (bpf_skb_load_bytes(skb, l4 + 8 + 4, &bth, sizeof bth) == 0)
      h = mix32(h ^ (bth & bpf_htonl(0x00ffffff)));
  }
  return h;
}

static __always_inline int lb_member_down(__u32 ifindex) {
  struct fabemu_link_cfg* cfg = bpf_map_lookup_elem(&fabemu_cfg, &ifindex);
  return cfg && (cfg->flags & FABEMU_LINK_DOWN);
}

/* What the member's link still has to send, in ns of its virtual clock (0: idle or unshaped). */
static __always_inline __u64 lb_backlog(__u32 ifindex, __u64 now) {
  struct fabemu_link_state* st = bpf_map_lookup_elem(&fabemu_state, &ifindex);
  if (!st) return 0;
  const __u64 next = st->next_ns; /* racy but whole: a 64-bit load */
  return next > now ? next - now : 0;
}

/* A fresh choice for a frame or a flowlet among the members whose link is up, looking from
 * draw % n round (so that ties fall to the draw): the first (flowlet, spray) or the one with the
 * least backlog (adaptive). `draw` is the flow's hash for a flowlet, or the frame's sequence
 * mixed with the seed. FABEMU_LB_MAX_MEMBERS when every member is down. */
static __always_inline __u32 lb_fresh(const struct fabemu_lb_group* g, __u32 draw, __u64 now) {
  const __u32 start = draw % g->n;
  const int adaptive = g->mode == FABEMU_LB_ADAPTIVE;
  __u32 best = FABEMU_LB_MAX_MEMBERS;
  __u64 best_backlog = ~0ULL;
  for (__u32 i = 0; i < FABEMU_LB_MAX_MEMBERS; i++) {
    if (i >= g->n) break;
    __u32 m = start + i;
    if (m >= g->n) m -= g->n;
    if (m >= FABEMU_LB_MAX_MEMBERS) break;
    const __u32 ifindex = g->members[m].ifindex;
    if (lb_member_down(ifindex)) continue;
    if (!adaptive) return m;
    const __u64 b = lb_backlog(ifindex, now);
    if (b < best_backlog) {
      best_backlog = b;
      best = m;
    }
  }
  return best;
}

/* The member for this frame, noting moves and skips in `cnt`. */
static __attribute__((noinline)) __u32 lb_choose(const struct fabemu_lb_group* g, __u32 group,
                                                 __u32 hash, struct fabemu_lb_counters* cnt) {
  if (!g || !cnt || g->n == 0 || g->n > FABEMU_LB_MAX_MEMBERS) return FABEMU_LB_MAX_MEMBERS;
  /* Static ECMP: the hash's member for the flow's life, down or not (blackholed until the
   * routes change, as with the kernel's own ECMP). */
  if (g->mode == FABEMU_LB_ECMP) return hash % g->n;
  const __u64 now = bpf_ktime_get_ns();
  struct fabemu_lb_flow_key key = {group, hash};
  struct fabemu_lb_flow* flow = bpf_map_lookup_elem(&fabemu_lb_flows, &key);
  const int per_frame = g->mode == FABEMU_LB_SPRAY ||
                        (g->mode == FABEMU_LB_ADAPTIVE && !(g->flags & FABEMU_LB_PER_FLOWLET));
  __u32 m = FABEMU_LB_MAX_MEMBERS;
  if (flow && !per_frame && now - flow->last_ns <= g->gap_ns && flow->member < g->n &&
      !lb_member_down(g->members[flow->member & (FABEMU_LB_MAX_MEMBERS - 1)].ifindex)) {
    m = flow->member; /* inside the flowlet */
  } else {
    __u32 draw = hash;
    if (g->mode == FABEMU_LB_SPRAY) {
      __u64* seq = bpf_map_lookup_elem(&fabemu_lb_seq, &group);
      const __u64 s = seq ? *seq : 0; /* racy between CPUs, as a switch's pipelines are */
      if (seq) __sync_fetch_and_add(seq, 1);
      __u64 st = s ^ ((__u64)g->seed << 32);
      draw = (g->flags & FABEMU_LB_RANDOM) ? (__u32)next_random(&st) : (__u32)s;
    } else if (g->mode == FABEMU_LB_FLOWLET && flow) {
      flow->flowlets++; /* the flowlet's number: each new flowlet of the flow draws afresh */
      draw = mix32(hash ^ flow->flowlets);
    }
    m = lb_fresh(g, draw, now);
    if (m < FABEMU_LB_MAX_MEMBERS && g->mode != FABEMU_LB_ADAPTIVE && m != draw % g->n)
      cnt->down_skips++;
  }
  if (m >= FABEMU_LB_MAX_MEMBERS) return m;
  if (flow) {
    if (flow->member != m) cnt->moves++;
    flow->member = m;
    flow->last_ns = now;
  } else {
    struct fabemu_lb_flow fresh = {now, m, 0};
    bpf_map_update_elem(&fabemu_lb_flows, &key, &fresh, BPF_ANY);
  }
  return m;
}

/* A frame at its last hop: counted in its flow's order (load_balance.h). `meta` is the IPv4
 * header's protocol (bits 0-7), length in words (8-11) and ID (16-31); `ip_len` its total
 * length. A global function: the verifier checks it once. */
__attribute__((noinline)) int lb_order(struct __sk_buff* skb, __u32 saddr, __u32 daddr, __u32 meta,
                                       __u32 ip_len) {
  if (!skb) return 0;
  const __u32 ihl = ((meta >> 8) & 0xf) * 4, proto = meta & 0xff, l4 = ETH_HLEN + ihl;
  struct fabemu_lb_order_key k = {saddr, daddr, 0, proto};
  __u32 seq = bpf_ntohs((__u16)(meta >> 16)), mask = 0xffff;
  if (bpf_skb_load_bytes(skb, l4, &k.ports, sizeof k.ports)) return 0;
  if (proto == IPPROTO_UDP) {
    if ((k.ports >> 16) != bpf_htons(FABEMU_ROCEV2_PORT)) return 0;
    __u32 bth[2]; /* the destination QP's word and the PSN's, after the UDP header and 4 bytes */
    if (bpf_skb_load_bytes(skb, l4 + 8 + 4, bth, sizeof bth)) return 0;
    k.ports = bth[0] & bpf_htonl(0x00ffffff);
    k.proto = FABEMU_LB_ORDER_ROCE;
    seq = bpf_ntohl(bth[1]) & 0x00ffffff;
    mask = 0x00ffffff;
  } else if (proto != IPPROTO_TCP) {
    return 0;
  } else {
    /* Segments with data only: pure ACKs' IDs do not move with the flow (on 6.18 nearly all
     * of a flow's ACKs came out "out of order"). A super-frame's total length may be 0 (BIG
     * TCP): it carries data. */
    __u8 doff;
    if (bpf_skb_load_bytes(skb, l4 + 12, &doff, 1)) return 0;
    if (ip_len && ip_len <= ihl + (doff >> 4) * 4) return 0;
  }
  const __u32 segs = skb->gso_segs ? skb->gso_segs : 1;
  struct fabemu_lb_order* o = bpf_map_lookup_elem(&fabemu_lb_order, &k);
  if (!o) {
    struct fabemu_lb_order fresh = {segs, 0, (seq + segs) & mask, 0};
    bpf_map_update_elem(&fabemu_lb_order, &k, &fresh, BPF_NOEXIST);
    return 0;
  }
  __sync_fetch_and_add(&o->frames, segs);
  /* Serial numbers: behind the next expected when the difference is in the upper half. Where
   * the link model gives each hop its own hash (kernels before 6.11, no per-namespace ECMP
   * seed), a sprayed flow's frames may meet on two CPUs here, and the count is approximate. */
  if (((seq - o->next) & mask) > (mask >> 1))
    __sync_fetch_and_add(&o->reordered, segs);
  else
    o->next = (seq + segs) & mask; /* one CPU at a time: RPS steers a flow by its hash */
  return 0;
}

SEC("tc")
int fabemu_balance(struct __sk_buff* skb) {
  if (skb->protocol != bpf_htons(ETH_P_IP)) return TC_ACT_OK;
  __u32 port = skb->ingress_ifindex ? skb->ingress_ifindex : skb->ifindex;
  __u32* sw = bpf_map_lookup_elem(&fabemu_lb_ports, &port);
  if (!sw) return TC_ACT_OK;
  struct lb_headers ip;
  if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof ip) != 0) return TC_ACT_OK;
  if ((ip.ver_ihl >> 4) != 4 || ip.ttl <= 1) return TC_ACT_OK; /* the kernel answers TTL 1 */
  struct fabemu_lb_route_key rk = {64, *sw, ip.daddr};
  __u32* group = bpf_map_lookup_elem(&fabemu_lb_routes, &rk);
  if (!group || *group == FABEMU_LB_NO_GROUP) return TC_ACT_OK;
  if (*group == FABEMU_LB_LAST_HOP) {
    const __u32 first = (ip.frag & bpf_htons(0x1fff)) == 0;
    if (first)
      lb_order(skb, ip.saddr, ip.daddr, ip.protocol | (ip.ver_ihl & 0xf) << 8 | (__u32)ip.id << 16,
               bpf_ntohs(ip.tot_len));
    return TC_ACT_OK;
  }
  const __u32 gi = *group;
  struct fabemu_lb_group* g = bpf_map_lookup_elem(&fabemu_lb_groups, &gi);
  struct fabemu_lb_counters* cnt = bpf_map_lookup_elem(&fabemu_lb_counters, &gi);
  if (!g || !cnt) return TC_ACT_OK;
  __u32 m = lb_choose(g, gi, lb_hash(skb, &ip, g->flags, g->seed), cnt);
  if (m >= FABEMU_LB_MAX_MEMBERS) {
    cnt->no_member++;
    return TC_ACT_OK;
  }
  /* The bound again where the verifier sees it (the compiler drops a mask it can prove). */
  asm volatile("" : "+r"(m));
  m &= FABEMU_LB_MAX_MEMBERS - 1;
  /* Forwarding, as the kernel's FIB would: one hop less, the checksum updated to match. */
  const __u16 old_word = bpf_htons((__u16)ip.ttl << 8 | ip.protocol);
  const __u8 ttl = ip.ttl - 1;
  const __u16 new_word = bpf_htons((__u16)ttl << 8 | ip.protocol);
  if (bpf_l3_csum_replace(skb, ETH_HLEN + 10, old_word, new_word, sizeof(__u16)) != 0 ||
      bpf_skb_store_bytes(skb, ETH_HLEN + 8, &ttl, 1, 0) != 0)
    return TC_ACT_SHOT;
  const __u64 segs = skb->gso_segs ? skb->gso_segs : 1;
  cnt->frames[m] += segs;
  cnt->bytes[m] += skb->len;
  struct bpf_redir_neigh nh = {};
  nh.nh_family = 2; /* AF_INET */
  nh.ipv4_nh = g->members[m].nexthop;
  return bpf_redirect_neigh(g->members[m].ifindex, &nh, sizeof nh, 0);
}

#endif /* FABEMU_EBPF_LOAD_BALANCE_BPF_H_ */
