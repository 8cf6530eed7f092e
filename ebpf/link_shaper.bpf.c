// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The link model at the egress of an emulated port: down, rate (EDT virtual clock), queue
 * limit, loss, ECN marking, delay and jitter, and per-port counters. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "link_maps.h"
#include "link_shaper.h"

/* Bounds that keep every product below 2^64: frames are far below 16 MiB (even BIG TCP stops at
 * 512 KiB), 2^60 bit/s is unlimited for any link, queue limits above 2 GiB are not buffers. */
#define MAX_WIRE_BYTES (1ULL << 24)
#define MAX_RATE_BPS (1ULL << 60)
#define MAX_QUEUE_BYTES (1ULL << 31)
#define NS_PER_SEC_BITS 8000000000ULL /* 8 bits/byte * 1e9 ns/s */

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FABEMU_MAX_LINKS);
  __type(key, __u32);
  __type(value, struct fabemu_link_state);
} fabemu_state SEC(".maps");

/* Zeroed counters to start a link's from: a struct this size on counters_of()'s stack would
 * push the deepest call chain over the 512 bytes Linux 6.1 allows. Never written. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct fabemu_link_counters);
} fabemu_zero_counters SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FABEMU_MAX_LINKS);
  __type(key, __u32);
  __type(value, struct fabemu_port);
} fabemu_ports SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FABEMU_MAX_LINKS);
  __type(key, __u32);
  __type(value, struct fabemu_pfc_state);
} fabemu_pfc_state SEC(".maps");

/* Switches' shared buffers (switches: {buffer, alpha}), by the id their ports' configs name. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FABEMU_MAX_LINKS);
  __type(key, __u32);
  __type(value, struct fabemu_buffer_cfg);
} fabemu_buffer_cfg SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FABEMU_MAX_LINKS);
  __type(key, __u32);
  __type(value, struct fabemu_buffer_state);
} fabemu_buffer_state SEC(".maps");

enum verdict { PASS, DROP_DOWN, DROP_LOSS, DROP_QUEUE, DROP_WATCHDOG };

/* splitmix64: one 64-bit multiply-xorshift step per draw, so a seed gives the same sequence on
 * every kernel and in the C++ reference used by the tests. */
static __always_inline __u64 next_random(__u64* s) {
  __u64 z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static __always_inline int chance(__u32 r, __u32 p) {
  return p == FABEMU_PROB_ALWAYS || r < p;
}

/* Loss of this packet. The state transition and the draw use the two halves of one 64-bit
 * random number, so every packet consumes the same amount of randomness. */
static __always_inline int lost(const struct fabemu_link_cfg* cfg, struct fabemu_link_state* st,
                                __u64 r) {
  __u32 lo = (__u32)r, hi = (__u32)(r >> 32);
  if (!(cfg->flags & FABEMU_LINK_GE)) return cfg->loss && chance(hi, cfg->loss);
  if (st->ge_bad) {
    if (chance(lo, cfg->ge_r)) st->ge_bad = 0;
  } else if (chance(lo, cfg->ge_p)) {
    st->ge_bad = 1;
  }
  __u32 p = st->ge_bad ? cfg->ge_loss_bad : cfg->ge_loss_good;
  return p && chance(hi, p);
}

/* Serialization time of `bytes` at `rate`, carrying the division remainder in `rem` so that a
 * stream of frames takes exactly bytes*8e9/rate ns in total. bytes <= 2^24 and rem < rate <=
 * 2^60 keep the numerator below 2^64. */
static __always_inline __u64 tx_ns(__u64 bytes, __u64 rate, __u64* rem) {
  __u64 num = bytes * NS_PER_SEC_BITS + *rem;
  *rem = num % rate;
  return num / rate;
}

/* Index of the highest set bit plus one (0 for 0), without loops. */
static __always_inline __u32 fls64(__u64 x) {
  __u32 n = 0;
  if (x >> 32) {
    n += 32;
    x >>= 32;
  }
  if (x >> 16) {
    n += 16;
    x >>= 16;
  }
  if (x >> 8) {
    n += 8;
    x >>= 8;
  }
  if (x >> 4) {
    n += 4;
    x >>= 4;
  }
  if (x >> 2) {
    n += 2;
    x >>= 2;
  }
  if (x >> 1) {
    n += 1;
    x >>= 1;
  }
  return n + (__u32)x;
}

static __always_inline __u32 hist_bucket(__u64 wait_ns) {
  __u32 b = fls64(wait_ns >> FABEMU_HIST_SHIFT);
  if (b > FABEMU_HIST_BUCKETS - 1) b = FABEMU_HIST_BUCKETS - 1;
  /* Linux 6.1's verifier loses a bound that the compiler kept on a copy of the register it then
   * indexes with ("unbounded memory access"): hide the value from the compiler and bound it
   * again on the register that is used. */
  asm volatile("" : "+r"(b));
  return b & (FABEMU_HIST_BUCKETS - 1);
}

/* User space creates the state and counters of a link with its config; these fallbacks keep a
 * config written by other means (bpftool) from being ignored. */
/* Not inlined: their zeroed fallbacks then sit in frames of their own, off the stack of the
 * program's deepest call chain (Linux 6.1 refuses a combined stack over 512 bytes). */
static __attribute__((noinline)) struct fabemu_link_state* state_of(__u32 key) {
  struct fabemu_link_state* st = bpf_map_lookup_elem(&fabemu_state, &key);
  if (st) return st;
  struct fabemu_link_state zero;
  __builtin_memset(&zero, 0, sizeof(zero));
  bpf_map_update_elem(&fabemu_state, &key, &zero, BPF_NOEXIST);
  return bpf_map_lookup_elem(&fabemu_state, &key);
}

static __attribute__((noinline)) struct fabemu_link_counters* counters_of(__u32 key) {
  struct fabemu_link_counters* c = bpf_map_lookup_elem(&fabemu_counters, &key);
  if (c) return c;
  __u32 zero_key = 0;
  struct fabemu_link_counters* zero = bpf_map_lookup_elem(&fabemu_zero_counters, &zero_key);
  if (!zero) return 0;
  bpf_map_update_elem(&fabemu_counters, &key, zero, BPF_NOEXIST);
  return bpf_map_lookup_elem(&fabemu_counters, &key);
}

/* Whether the frame belongs to the lab's lossless class: its DSCP, or UDP to the class's port
 * (RoCEv2). IPv4 fragments after the first carry no UDP header; IPv6 extension headers are not
 * followed. A global function, like the PFC helpers below: the verifier checks it once. */
__attribute__((noinline)) int is_lossless(struct __sk_buff* skb, __u64 dscp_mask, __u32 udp_port) {
  if (!skb || (!dscp_mask && !udp_port)) return 0;
  __u8 h[20];
  __u32 l4, proto;
  __u16 port;
  if (skb->protocol == bpf_htons(ETH_P_IP)) {
    if (bpf_skb_load_bytes(skb, ETH_HLEN, h, 20)) return 0;
    if ((dscp_mask >> (h[1] >> 2)) & 1) return 1;
    if ((h[6] & 0x1f) | h[7]) return 0;
    proto = h[9];
    l4 = ETH_HLEN + (h[0] & 0xf) * 4;
  } else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
    if (bpf_skb_load_bytes(skb, ETH_HLEN, h, 8)) return 0;
    if ((dscp_mask >> (((h[0] & 0xf) << 2) | (h[1] >> 6))) & 1) return 1;
    proto = h[6];
    l4 = ETH_HLEN + 40;
  } else {
    return 0;
  }
  if (!udp_port || proto != IPPROTO_UDP) return 0;
  if (bpf_skb_load_bytes(skb, l4 + 2, &port, 2)) return 0;
  return bpf_ntohs(port) == udp_port;
}

/* PFC's work is in global functions: the verifier checks each once, not again on every path
 * of the program that reaches it (inlined, they made loading take seconds). */
/* Times stay far below 2^63: the sign of a - b says which is larger. */
static __always_inline __u64 max_u64(__u64 a, __u64 b) {
  return a ^ ((a ^ b) & -((a - b) >> 63));
}

static __always_inline __u64 all_ones_if_equal(__u64 a, __u64 b) {
  __u64 x = a ^ b;
  return ((x | -x) >> 63) - 1; /* x == 0: 0 - 1 = ~0; else 1 - 1 = 0 */
}

/* The buffer's bytes still there at the start of slot `from` (which counts whole). Live slots
 * hold epochs within FABEMU_PFC_SLOTS of now, so visiting from+j for j < FABEMU_PFC_SLOTS meets
 * each once, in the order they leave. Branch-free, like the next one. */
__attribute__((noinline)) __u64 occupancy_at(const struct fabemu_occupancy* p, __u64 from) {
  if (!p) return 0;
  __u64 sum = 0;
  for (__u32 j = 0; j < FABEMU_PFC_SLOTS; j++) {
    __u32 i = (from + j) & (FABEMU_PFC_SLOTS - 1);
    sum += p->slot_bytes[i] & all_ones_if_equal(p->slot_epoch[i], from + j);
  }
  return sum;
}

/* The first slot from `from` on at whose start at most `xon` of the `left` bytes are there.
 * Bytes and thresholds stay far below 2^63, so the sign of xon - left says left <= xon. After
 * the last slot everything has left. */
__attribute__((noinline)) __u64 pfc_resume_slot(const struct fabemu_occupancy* p, __u64 from,
                                                __u64 left, __u64 xon) {
  if (!p) return from;
  __u64 found = 0, slot = from + FABEMU_PFC_SLOTS;
  for (__u32 j = 0; j < FABEMU_PFC_SLOTS; j++) {
    __u64 below = ((xon - left) >> 63) ^ 1; /* 1 when left <= xon */
    __u64 take = below & (found ^ 1);       /* the first such slot */
    slot = (slot & (take - 1)) | ((from + j) & -take);
    found |= below;
    __u32 i = (from + j) & (FABEMU_PFC_SLOTS - 1);
    left -= p->slot_bytes[i] & all_ones_if_equal(p->slot_epoch[i], from + j);
  }
  return slot;
}

/* `bytes` that leave in slot `e` occupy the buffer from slot `now_e` (beyond the horizon, until
 * the horizon). */
static __always_inline void occupy(struct fabemu_occupancy* p, __u64 now_e, __u64 e, __u64 bytes) {
  if (e > now_e + FABEMU_PFC_SLOTS - 1) e = now_e + FABEMU_PFC_SLOTS - 1;
  __u32 i = e & (FABEMU_PFC_SLOTS - 1);
  if (p->slot_epoch[i] != e) {
    p->slot_epoch[i] = e; /* the slot's old epoch has passed: its bytes have left */
    p->slot_bytes[i] = 0;
  }
  __sync_fetch_and_add(&p->slot_bytes[i], bytes);
}

/* A switch's shared buffer `id`: the dynamic threshold now, alpha x the bytes still free
 * (~0: no such buffer). */
__attribute__((noinline)) __u64 buffer_allowance(__u32 id, __u64 now) {
  if (!id) return ~0ULL;
  struct fabemu_buffer_cfg* c = bpf_map_lookup_elem(&fabemu_buffer_cfg, &id);
  struct fabemu_buffer_state* p = bpf_map_lookup_elem(&fabemu_buffer_state, &id);
  if (!c || !p || !c->bytes) return ~0ULL;
  __u64 slot = c->slot_ns ? c->slot_ns : 1;
  __u64 used = occupancy_at(&p->occ, now / slot);
  __u64 bytes = c->bytes < MAX_QUEUE_BYTES ? c->bytes : MAX_QUEUE_BYTES;
  __u64 free = bytes > used ? bytes - used : 0;
  return (free * (c->alpha & 0xffff)) / FABEMU_BUFFER_ALPHA_ONE; /* alpha <= 64 */
}

/* How long frames may wait behind this port's backlog, at `rate`, in its switch's shared
 * buffer (~0: the port has a queue of its own). */
static __always_inline __u64 buffer_limit_ns(__u32 id, __u64 now, __u64 rate) {
  if (!id || !rate) return ~0ULL;
  __u64 limit = buffer_allowance(id, now);
  return limit == ~0ULL ? ~0ULL : limit * NS_PER_SEC_BITS / rate;
}

/* PFC's Xoff of a buffer with `xoff` (FABEMU_PFC_XOFF_DYNAMIC: the dynamic threshold of the
 * receiving switch's shared buffer `id`; none: never). */
static __always_inline __u64 pfc_xoff_now(__u64 xoff, __u32 id, __u64 now) {
  if (xoff != FABEMU_PFC_XOFF_DYNAMIC) return xoff;
  __u64 allowance = buffer_allowance(id, now);
  return allowance == ~0ULL ? FABEMU_PFC_XOFF_DYNAMIC : allowance;
}

/* `mine` with xoff: dynamic, made the thresholds as they stand now at the far switch, whose
 * buffer for this link is `peer`: Xoff alpha x its shared buffer still free, Xon xon_offset
 * below. A far end without a shared buffer (a host) keeps the marker: it never pauses. */
__attribute__((noinline)) int pfc_dynamic_thresholds(__u32 peer, struct fabemu_pfc_cfg* mine,
                                                     __u64 now) {
  if (!mine || mine->xoff_bytes != FABEMU_PFC_XOFF_DYNAMIC) return 0;
  struct fabemu_pfc_cfg* far = bpf_map_lookup_elem(&fabemu_pfc_cfg, &peer);
  __u32 id = far ? far->buffer_id : 0;
  __u64 allowance = buffer_allowance(id, now);
  if (allowance == ~0ULL) return 0;
  __u64 offset = mine->xon_bytes;
  mine->xon_offset = (__u32)(offset < 0xffffffffULL ? offset : 0xffffffffULL);
  mine->xoff_bytes = allowance;
  mine->xon_bytes = allowance > offset ? allowance - offset : 0;
  mine->buffer_id = id;
  return 1;
}

/* A frame of `bytes` the port admitted occupies its switch's buffer until it leaves. */
__attribute__((noinline)) int buffer_account(__u32 id, __u64 now, __u64 depart, __u64 bytes) {
  if (!id) return 0;
  struct fabemu_buffer_cfg* c = bpf_map_lookup_elem(&fabemu_buffer_cfg, &id);
  struct fabemu_buffer_state* p = bpf_map_lookup_elem(&fabemu_buffer_state, &id);
  if (!c || !p) return 0;
  __u64 slot = c->slot_ns ? c->slot_ns : 1;
  __u64 now_e = now / slot;
  occupy(&p->occ, now_e, depart / slot, bytes);
  __u64 used = occupancy_at(&p->occ, now_e);
  if (used > p->peak_bytes) p->peak_bytes = used; /* a race loses a peak, never invents one */
  return 1;
}

/* xoff: dynamic's resume: the first slot from `from` on at whose start the port's buffer,
 * `left` bytes now, is at most xon_offset below the dynamic Xoff then, alpha x the shared
 * buffer still free, which rises as the buffer drains (the same slots). Branch-free, like
 * pfc_resume_slot; no calls (it is the deepest frame of the program's call chain). */
__attribute__((noinline)) __u64 pfc_resume_slot_dynamic(const struct fabemu_occupancy* in,
                                                        const struct fabemu_pfc_cfg* mine,
                                                        __u64 from, __u64 left) {
  if (!in || !mine) return from;
  __u32 id = mine->buffer_id;
  struct fabemu_buffer_cfg* c = bpf_map_lookup_elem(&fabemu_buffer_cfg, &id);
  struct fabemu_buffer_state* shared = bpf_map_lookup_elem(&fabemu_buffer_state, &id);
  if (!c || !shared) return from;
  __u64 used = 0;
  for (__u32 j = 0; j < FABEMU_PFC_SLOTS; j++) {
    __u32 i = (from + j) & (FABEMU_PFC_SLOTS - 1);
    used += shared->occ.slot_bytes[i] & all_ones_if_equal(shared->occ.slot_epoch[i], from + j);
  }
  __u64 bytes = c->bytes < MAX_QUEUE_BYTES ? c->bytes : MAX_QUEUE_BYTES;
  __u64 alpha = c->alpha & 0xffff, offset = mine->xon_offset;
  __u64 found = 0, slot = from + FABEMU_PFC_SLOTS;
  for (__u32 j = 0; j < FABEMU_PFC_SLOTS; j++) {
    __u64 free = (bytes - used) & (((bytes - used) >> 63) - 1); /* 0 when used > bytes */
    __u64 xoff = (free * alpha) / FABEMU_BUFFER_ALPHA_ONE;
    __u64 xon = (xoff - offset) & (((xoff - offset) >> 63) - 1);
    __u64 below = ((xon - left) >> 63) ^ 1; /* 1 when left <= xon */
    __u64 take = below & (found ^ 1);
    slot = (slot & (take - 1)) | ((from + j) & -take);
    found |= below;
    __u32 i = (from + j) & (FABEMU_PFC_SLOTS - 1);
    left -= in->slot_bytes[i] & all_ones_if_equal(in->slot_epoch[i], from + j);
    used -= shared->occ.slot_bytes[i] & all_ones_if_equal(shared->occ.slot_epoch[i], from + j);
  }
  return slot;
}

/* Whether PFC guards the buffer of the port `in` (frames that came in there are not dropped). */
__attribute__((noinline)) int pfc_guarded(__u32 in) {
  if (!in) return 0;
  struct fabemu_pfc_cfg* c = bpf_map_lookup_elem(&fabemu_pfc_cfg, &in);
  return c && c->xoff_bytes;
}

/* A lossless frame of `bytes` that came in over port `in` leaves this node at `depart`: it
 * occupies that port's buffer until then (beyond the horizon, until the horizon). */
__attribute__((noinline)) int pfc_account(__u32 in, __u64 now, __u64 depart, __u64 bytes) {
  struct fabemu_pfc_cfg* c = bpf_map_lookup_elem(&fabemu_pfc_cfg, &in);
  struct fabemu_pfc_state* p = bpf_map_lookup_elem(&fabemu_pfc_state, &in);
  if (!c || !p || !c->xoff_bytes) return 0;
  __u64 slot = c->slot_ns ? c->slot_ns : 1;
  __u64 now_e = now / slot;
  occupy(&p->occ, now_e, depart / slot, bytes);
  if (occupancy_at(&p->occ, now_e) >= pfc_xoff_now(c->xoff_bytes, c->buffer_id, now)) p->paused = 1;
  return 1;
}

/* When this port may send its next lossless frame, which would leave at `at`, given the far
 * end's buffer `peer` for this link (`mine`: its thresholds): `at` itself unless the buffer is
 * over Xoff then (or still over Xon after a pause), otherwise the start of the slot in which
 * it falls to Xon. */
__attribute__((noinline)) __u64 pfc_hold_until(__u32 peer, const struct fabemu_pfc_cfg* mine,
                                               __u64 now, __u64 at) {
  struct fabemu_pfc_state* p = bpf_map_lookup_elem(&fabemu_pfc_state, &peer);
  if (!p || !mine) return at;
  __u64 xoff = mine->xoff_bytes, xon = mine->xon_bytes;
  __u64 slot = mine->slot_ns ? mine->slot_ns : 1;
  __u64 now_e = now / slot, at_e = at / slot;
  __u64 occ_now = occupancy_at(&p->occ, now_e);
  if (occ_now >= xoff)
    p->paused = 1;
  else if (occ_now <= xon)
    p->paused = 0;
  __u64 occ = at_e == now_e ? occ_now : occupancy_at(&p->occ, at_e);
  if (occ < xoff && !(p->paused && occ > xon)) return at;
  /* xoff: dynamic: the threshold rises as the far switch's buffer drains. */
  if (mine->buffer_id) return pfc_resume_slot_dynamic(&p->occ, mine, at_e, occ) * slot;
  return pfc_resume_slot(&p->occ, at_e, occ, xon) * slot;
}

/* Whether RED marks a frame that waits `wait` behind the backlog of port `key` (ecn_kmin_bytes
 * to ecn_kmax_bytes, as times at the link's current rate like the other byte limits), given the
 * frame's draw `r`. A global function: the verifier checks it once. */
__attribute__((noinline)) int red_marks(__u32 key, __u64 wait, __u32 r) {
  struct fabemu_link_cfg* cfg = bpf_map_lookup_elem(&fabemu_cfg, &key);
  if (!cfg || !cfg->ecn_kmax_bytes) return 0;
  __u64 rate = cfg->rate_bps < MAX_RATE_BPS ? cfg->rate_bps : MAX_RATE_BPS;
  if (!rate) return 0; /* nothing waits on a link without a rate */
  __u64 kmin = cfg->ecn_kmin_bytes < MAX_QUEUE_BYTES ? cfg->ecn_kmin_bytes : MAX_QUEUE_BYTES;
  __u64 kmax = cfg->ecn_kmax_bytes < MAX_QUEUE_BYTES ? cfg->ecn_kmax_bytes : MAX_QUEUE_BYTES;
  __u64 lo = kmin * NS_PER_SEC_BITS / rate, hi = kmax * NS_PER_SEC_BITS / rate;
  if (wait <= lo) return 0;
  if (wait > hi) return 1;
  /* pmax * (wait - lo) / (hi - lo), in 32-bit fractions: both scaled below 2^32 first. */
  __u64 span = hi - lo, d = wait - lo;
  __u32 shift = fls64(span);
  shift = shift > 32 ? shift - 32 : 0;
  span >>= shift;
  d >>= shift;
  if (!span) return 1;
  __u64 frac = (d << 32) / span; /* d <= span < 2^32 */
  if (frac > FABEMU_PROB_ALWAYS) frac = FABEMU_PROB_ALWAYS;
  __u64 p = ((__u64)cfg->ecn_pmax * frac) >> 32;
  return chance(r, (__u32)p);
}

/* murmur3's finalizer: every input bit moves every output bit. */
static __always_inline __u32 mix32(__u32 h) {
  h ^= h >> 16;
  h *= 0x85ebca6b;
  h ^= h >> 13;
  h *= 0xc2b2ae35;
  h ^= h >> 16;
  return h;
}

/* A frame damaged on the wire: one bit of its IPv4 header checksum flipped, so that the next
 * hop's IP layer discards it (as a port discards a frame whose FCS fails; counted there as an
 * IP header error). A duplicate: a clone sent through this port again (it takes its own turn
 * on the link), marked so that it is not duplicated in turn. */
/* Its own lookups and draw (under the link's lock, after the frame's loss and jitter draws):
 * what it needs would otherwise stay live across the whole program, on a stack whose deepest
 * call chain Linux 6.1 holds to 512 bytes. */
__attribute__((noinline)) int damage(struct __sk_buff* skb, __u32 key, int copy) {
  if (!skb) return 0;
  struct fabemu_link_cfg* cfg = bpf_map_lookup_elem(&fabemu_cfg, &key);
  struct fabemu_link_state* st = bpf_map_lookup_elem(&fabemu_state, &key);
  struct fabemu_link_counters* cnt = bpf_map_lookup_elem(&fabemu_counters, &key);
  if (!cfg || !st || !cnt) return 0;
  const __u32 corrupt = cfg->corrupt, duplicate = cfg->duplicate;
  bpf_spin_lock(&st->lock);
  const __u64 r = next_random(&st->prng);
  bpf_spin_unlock(&st->lock);
  const __u32 lo = (__u32)r, hi = (__u32)(r >> 32);
  if (corrupt && chance(lo, corrupt) && skb->protocol == bpf_htons(ETH_P_IP)) {
    __u8 b;
    const __u32 at = ETH_HLEN + 10 + ((hi >> 3) & 1); /* iphdr.check, either byte */
    if (bpf_skb_load_bytes(skb, at, &b, 1) == 0) {
      b ^= (__u8)(1U << (hi & 7));
      if (bpf_skb_store_bytes(skb, at, &b, 1, 0) == 0) cnt->corrupted++;
    }
  }
  if (duplicate && chance(hi, duplicate) && !copy) {
    skb->mark |= FABEMU_DUP_MARK;
    if (bpf_clone_redirect(skb, skb->ifindex, 0) == 0) cnt->duplicated++;
    skb->mark &= ~FABEMU_DUP_MARK;
  }
  return 0;
}

/* A frame the wire loses (loss, a burst, a link down, PFC's watchdog), silently. TC_ACT_SHOT at
 * egress would tell the sending socket (NET_XMIT_DROP): on a host's own port ping would send
 * the echo again at once and TCP would see local congestion instead of a loss on the wire.
 * TC_ACT_STOLEN would be silent under clsact but means "next program" under tcx. A redirect to
 * ifindex 0, which no device has, frees the frame in skb_do_redirect after the egress hook has
 * already answered NET_XMIT_SUCCESS, under tcx and clsact alike; on a switch's port (forwarded
 * frames, whose sender never hears) it is the same drop.
 * A tail drop is not the wire's: it is the port's own queue, which on a host is its NIC's, and
 * a host's stack is told when its queue is full, as by any qdisc (ENOBUFS to ping, local
 * congestion to TCP, which backs off instead of counting as retransmissions what its own NIC
 * had no room for). */
static __always_inline int wire_drop(void) {
  return bpf_redirect(FABEMU_NO_IFINDEX, 0);
}

/* DCQCN's notification and reaction points (rdma: {cc: dcqcn}). */
#include "dcqcn.bpf.h"

/* One frame on its way through a port: what it is, then what the port decided. */
struct frame {
  __u64 wire, rate, queue_bytes_ns, ecn_bytes_ns, now;
  /* A GSO super-frame (fabric.gso) is `segs` wire frames, each with the headers again:
   * `l2_bytes` of frames (without the overhead), the last frame's `last_wire`, and `early`, how
   * long before `now` its first frame arrived (0 for a frame that arrived whole). */
  __u64 l2_bytes, last_wire, early;
  __u32 segs;
  __u32 in; /* the port it came in on (0: sent by this node) */
  /* Flags as bytes: this struct is on the stack of the program's deepest call chain, which
   * Linux 6.1 holds to 512 bytes (DCQCN's reaction point is on it). */
  __u8 guarded_in; /* ... which PFC guards */
  __u8 ll;         /* the lossless class, where PFC applies */
  __u8 no_queue_drop, queue_mode;
  __u64 hold; /* paused until then by the far end's buffer (0: not paused) */
  enum verdict v;
  __u64 wait, tstamp, done, paused_ns;
  int pause_began;
  __u32 red_r; /* RED's draw (with ecn_kmax_bytes) */
};

/* The headers each frame of a GSO super-frame carries: Ethernet, IP and TCP (with options) or
 * UDP. A global function: the verifier checks it once. */
__attribute__((noinline)) __u32 gso_header_bytes(struct __sk_buff* skb) {
  if (!skb) return 0;
  __u8 h[10];
  __u32 l4, proto;
  if (skb->protocol == bpf_htons(ETH_P_IP)) {
    if (bpf_skb_load_bytes(skb, ETH_HLEN, h, 10)) return ETH_HLEN + 20;
    proto = h[9];
    l4 = ETH_HLEN + (h[0] & 0xf) * 4;
  } else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
    if (bpf_skb_load_bytes(skb, ETH_HLEN, h, 8)) return ETH_HLEN + 40;
    proto = h[6];
    l4 = ETH_HLEN + 40;
  } else {
    return ETH_HLEN;
  }
  if (proto == IPPROTO_UDP) return l4 + 8;
  if (proto != IPPROTO_TCP || bpf_skb_load_bytes(skb, l4 + 12, h, 1)) return l4;
  return l4 + (h[0] >> 4) * 4;
}

/* The rate of the link a forwarded frame came in over: its other direction's, which is the same
 * unless a scenario gives the two directions different rates. */
__attribute__((noinline)) __u64 rate_in(__u32 in) {
  struct fabemu_link_cfg* c = bpf_map_lookup_elem(&fabemu_cfg, &in);
  return c ? c->rate_bps : 0;
}

/* The frame's size on the wire: one frame, or a GSO super-frame's `segs` frames. A forwarded
 * super-frame came in as frames one after the other at the rate of the link it came in over, the
 * last just now: a switch starts sending the first while the others arrive, so the port may
 * start the super-frame `early` (cut-through at the frame's granularity, as the switch does for
 * each frame). A host's own super-frame is all there at once, as TCP handed it over. */
static __always_inline void size_up(struct __sk_buff* skb, const struct fabemu_link_cfg* cfg,
                                    struct frame* f) {
  __u32 segs = skb->gso_segs;
  f->segs = 1;
  f->l2_bytes = skb->len;
  f->wire = (__u64)skb->len + cfg->overhead_bytes;
  f->last_wire = f->wire;
  f->early = 0;
  if (segs > 1 && segs < 0x10000) {
    __u64 hdr = gso_header_bytes(skb);
    f->segs = segs;
    f->l2_bytes = skb->len + (segs - 1) * hdr;
    f->wire = f->l2_bytes + segs * cfg->overhead_bytes;
    __u64 full = (__u64)skb->gso_size + hdr + cfg->overhead_bytes; /* every frame but the last */
    f->last_wire = f->wire > (segs - 1) * full ? f->wire - (segs - 1) * full : f->wire;
    __u64 in_rate = f->in ? rate_in(f->in) : 0;
    if (in_rate) f->early = (f->wire - f->last_wire) * NS_PER_SEC_BITS / in_rate;
  }
  if (f->wire > MAX_WIRE_BYTES) f->wire = MAX_WIRE_BYTES;
}

/* The frame's size on the wire, the port's limits at its current rate, and its class. */
static __always_inline void classify(struct __sk_buff* skb, const struct fabemu_link_cfg* cfg,
                                     struct fabemu_link_state* st, struct frame* f) {
  f->in = skb->ingress_ifindex;
  size_up(skb, cfg, f);
  f->rate = cfg->rate_bps < MAX_RATE_BPS ? cfg->rate_bps : MAX_RATE_BPS;
  __u64 queue_bytes = cfg->queue_bytes < MAX_QUEUE_BYTES ? cfg->queue_bytes : MAX_QUEUE_BYTES;
  /* The byte limit as time at the current rate: a live rate change rescales it. */
  f->queue_bytes_ns = f->rate && queue_bytes ? queue_bytes * NS_PER_SEC_BITS / f->rate : 0;
  /* The ECN threshold in bytes (a switch's K), as time at the current rate the same way. */
  __u64 ecn_bytes =
      cfg->ecn_threshold_bytes < MAX_QUEUE_BYTES ? cfg->ecn_threshold_bytes : MAX_QUEUE_BYTES;
  f->ecn_bytes_ns = f->rate && ecn_bytes ? ecn_bytes * NS_PER_SEC_BITS / f->rate : 0;
  f->now = bpf_ktime_get_ns();
  /* A switch's shared buffer: the dynamic threshold, read without the lock (frames admitted
   * meanwhile on other CPUs count from the next frame on), caps the port's own limit; a full
   * buffer's 0 becomes 1 ns, which every frame exceeds (0 would be "no limit"). Not a field of
   * its own: the frame's struct sits on the deepest call chain's stack. */
  __u64 shared_ns = buffer_limit_ns(cfg->buffer_id, f->now, f->rate);
  if (shared_ns != ~0ULL) {
    if (!f->queue_bytes_ns || shared_ns < f->queue_bytes_ns) f->queue_bytes_ns = shared_ns;
    if (!f->queue_bytes_ns) f->queue_bytes_ns = 1;
  }

  /* The lossless class: never dropped for queue reasons where PFC guards the buffer the frame
   * sits in (it came in over a PFC port, or this node sent it on a PFC port), held back while
   * the far end's buffer for this link is paused. */
  /* Classified only where PFC applies (this port pauses, or the frame came in over a guarded
   * port): a lab without PFC pays one lookup per forwarded frame, not a parse. */
  f->guarded_in = f->in && pfc_guarded(f->in);
  f->ll = (f->guarded_in || cfg->pfc_peer) &&
          is_lossless(skb, cfg->lossless_dscp, cfg->lossless_udp_port);
  f->no_queue_drop = f->ll && (f->in ? f->guarded_in : 1);
  /* In queue mode the lab's BPF qdisc pauses and keeps the buffers (pfc_qdisc.bpf.c). */
  f->queue_mode = (cfg->flags & FABEMU_LINK_PFC_QUEUE) != 0;
  f->hold = 0;
  if (f->ll && cfg->pfc_peer && cfg->pfc_xoff_bytes &&
      !(cfg->flags & (FABEMU_LINK_POLICER | FABEMU_LINK_PFC_QUEUE))) {
    /* When the frame would start: read without the lock, a guess that the stamp below fixes. */
    __u64 at = st->next_ns > f->now ? st->next_ns : f->now;
    if (st->ll_next_ns > at) at = st->ll_next_ns;
    struct fabemu_pfc_cfg mine = {cfg->pfc_xoff_bytes, cfg->pfc_xon_bytes, cfg->pfc_slot_ns, 0, 0};
    pfc_dynamic_thresholds(cfg->pfc_peer, &mine, f->now); /* xoff: dynamic */
    f->hold = pfc_hold_until(cfg->pfc_peer, &mine, f->now, at);
    if (f->hold <= at) f->hold = 0;
  }
}

/* Under the port's lock: the frame's loss draw, its start on the wire (after the frames before
 * it, and for the lossless class after a pause), tail drop or PFC's watchdog, and its
 * departure time (serialization, delay, jitter). */
static __always_inline void schedule(const struct fabemu_link_cfg* cfg,
                                     struct fabemu_link_state* st, struct frame* f) {
  bpf_spin_lock(&st->lock);
  if (!st->seeded || st->seeded_from != cfg->seed) {
    st->prng = cfg->seed;
    st->seeded_from = cfg->seed;
    st->seeded = 1;
    st->ge_bad = 0;
  }
  /* Drawn for every packet, dropped or not, so packet k's fate depends on the seed and k only. */
  int loss = lost(cfg, st, next_random(&st->prng));
  __u64 jitter_r = cfg->jitter_ns ? next_random(&st->prng) : 0;
  f->red_r = cfg->ecn_kmax_bytes ? (__u32)next_random(&st->prng) : 0;

  if (cfg->flags & FABEMU_LINK_DOWN) {
    f->v = DROP_DOWN;
  } else {
    /* Busy until next_ns; a forwarded super-frame's first frame was there `early` ago. */
    __u64 arrived = f->early < f->now ? f->now - f->early : 0;
    __u64 start = st->next_ns > arrived ? st->next_ns : arrived;
    /* Masks, not branches, for the class's clock: each branch here doubles what the verifier
     * walks from here to the end. */
    const __u64 ll_mask = -(__u64)(f->ll & 1), hold_mask = -((f->hold | -f->hold) >> 63);
    start = max_u64(start, st->ll_next_ns & ll_mask);
    if (f->hold) {
      /* Paused: the class waits for the far end's Xon; the other classes use the wire
       * meanwhile. A pause that began after the last one ended is a new XOFF. */
      __u64 from = start;
      if (st->pause_until < from) {
        st->pause_since = from;
        f->pause_began = 1;
      }
      if (f->hold > start) start = f->hold;
      if (cfg->pfc_watchdog_ns && start - st->pause_since > cfg->pfc_watchdog_ns) {
        f->v = DROP_WATCHDOG; /* stuck longer than the watchdog allows: the class is dropped */
        f->pause_began = 0;
      } else {
        __u64 last = st->pause_until > from ? st->pause_until : from;
        if (start > last) f->paused_ns = start - last;
      }
      if (start > st->pause_until) st->pause_until = start;
    }
    f->wait = start > f->now ? start - f->now : 0;
    __u64 rem = st->rate_rem;
    __u64 tx = f->rate ? tx_ns(f->wire, f->rate, &rem) : 0;
    __u64 done = start + tx;
    /* A super-frame started early: its last frame still leaves after it came in (onto a faster
     * link). Otherwise start >= now, and start + tx is already past it. */
    if (f->early) {
      __u64 last = f->now + (f->rate ? f->last_wire * NS_PER_SEC_BITS / f->rate : 0);
      if (done < last) done = last;
    }
    if (f->v == DROP_WATCHDOG) {
      /* the frame never occupies the link */
    } else if (!f->no_queue_drop && ((cfg->queue_ns && f->wait > cfg->queue_ns) ||
                                     (f->queue_bytes_ns && done - f->now > f->queue_bytes_ns))) {
      f->v = DROP_QUEUE; /* tail drop: the frame never occupies the link */
    } else {
      /* The frame arrives at the far end when its last bit does: end of serialization plus
       * propagation. A frame lost on the wire still used the link. A held frame does not
       * move the other classes' clock. */
      f->done = done;
      st->next_ns = (st->next_ns & hold_mask) | (f->done & ~hold_mask);
      st->ll_next_ns = (f->done & ll_mask) | (st->ll_next_ns & ~ll_mask);
      st->rate_rem = rem;
      if (loss) {
        f->v = DROP_LOSS;
      } else if (!(cfg->flags & FABEMU_LINK_POLICER)) {
        const __u64 leave = f->done;
        __u64 tstamp = leave + cfg->delay_ns;
        if (cfg->jitter_ns) {
          __u64 span = 2 * cfg->jitter_ns + 1;
          __u64 offset = jitter_r % span; /* uniform in [0, 2j]; shifted to [-j, +j] */
          tstamp += offset;
          tstamp = tstamp > leave + cfg->jitter_ns ? tstamp - cfg->jitter_ns : leave;
        }
        if ((cfg->flags & FABEMU_LINK_NO_REORDER) && tstamp < st->last_tstamp)
          tstamp = st->last_tstamp;
        st->last_tstamp = tstamp;
        f->tstamp = tstamp;
      }
    }
  }
  bpf_spin_unlock(&st->lock);
}

/* What the port decided, carried out and counted: a drop, or the frame on its way with its
 * departure time, CE mark, damage and this hop's ECMP hash. */
static __always_inline int carry_out(struct __sk_buff* skb, const struct fabemu_link_cfg* cfg,
                                     struct fabemu_link_counters* cnt, __u32 key,
                                     const struct frame* f) {
  /* Unconditional adds: a branch here would double the paths the verifier walks after it. */
  cnt->pause_ns += f->paused_ns;
  cnt->pause_events += f->pause_began;
  /* The frame sits in this node's buffer for the port it came in on until it leaves. */
  if (f->ll && f->guarded_in && f->done && !f->queue_mode)
    pfc_account(f->in, f->now, f->done, f->wire);
  /* ... and in its switch's shared buffer, whatever its class. */
  if (cfg->buffer_id && f->done) buffer_account(cfg->buffer_id, f->now, f->done, f->wire);

  /* Counted in frames: a super-frame's are all dropped, marked or handed on together. */
  const __u64 segs = f->segs;
  if (f->v != PASS) cnt->lossless_drops += (f->ll & 1) * segs;
  switch (f->v) {
    case DROP_DOWN:
      cnt->drop_down += segs;
      return wire_drop();
    case DROP_LOSS:
      cnt->drop_loss += segs;
      return wire_drop();
    case DROP_QUEUE:
      cnt->drop_queue += segs;
      return TC_ACT_SHOT; /* the port's own queue: see wire_drop() */
    case DROP_WATCHDOG:
      cnt->drop_watchdog += segs;
      return wire_drop();
    case PASS:
      break;
  }
  /* bpf_skb_ecn_set_ce marks ECT packets only and says so; CE packets count as marked. */
  if (((cfg->ecn_threshold_ns && f->wait > cfg->ecn_threshold_ns) ||
       (f->ecn_bytes_ns && f->wait > f->ecn_bytes_ns) ||
       (cfg->ecn_kmax_bytes && red_marks(key, f->wait, f->red_r))) &&
      bpf_skb_ecn_set_ce(skb) == 1)
    cnt->ce_marks += segs;
  /* Without rate, delay and jitter there is nothing to schedule: leave the socket's stamp. */
  if (f->tstamp && (f->rate || cfg->delay_ns || cfg->jitter_ns)) skb->tstamp = f->tstamp;
  /* Damage on the wire, drawn only where a link has it (loss and jitter sequences stay as they
   * were). A duplicate made by damage() on its second way through is shaped like any frame but
   * not duplicated again (at duplicate: 100% that would never end). */
  const int copy = (skb->mark & FABEMU_DUP_MARK) != 0;
  skb->mark &= ~FABEMU_DUP_MARK;
  if (cfg->corrupt | cfg->duplicate) damage(skb, key, copy);
  if (f->ll && f->queue_mode) skb->mark |= FABEMU_LOSSLESS_MARK; /* for the qdisc behind */
  cnt->packets += segs;
  cnt->bytes += f->l2_bytes;
  cnt->lossless_packets += (f->ll & 1) * segs;
  cnt->queue_delay_hist[hist_bucket(f->wait)] += segs;
  /* ECMP per switch, where the kernel has no ECMP seed per namespace (< 6.11; else the switches
   * seed their own and the flow keeps its hash: FABEMU_LINK_KEEP_HASH). A veth hands the next
   * namespace the skb with a hash (the sending socket's, or the flow hash RPS computed on the way
   * in, with one key for all namespaces), and a router that finds one uses it instead of hashing
   * the headers with a seed of its own: every tier would choose alike, and a fat-tree's flows
   * between pods would use half its core paths (polarization). The flow's hash mixed with this
   * direction's seed: still one per flow, but each next hop draws its choice afresh, as switches
   * with their own hash seeds do. (RPS then steers the flow to another CPU at each hop.) */
  if (!(cfg->flags & FABEMU_LINK_KEEP_HASH))
    bpf_set_hash(skb, mix32(bpf_get_hash_recalc(skb) ^ (__u32)(cfg->seed >> 32)));
  return TC_ACT_OK;
}

/* The link model on one frame; `qp_at`: DCQCN's reaction point holds it until then (0: no).
 * A global function: the program's entry below calls the reaction point beside it, not from
 * under this frame's stack (Linux 6.1 holds a call chain's stack to 512 bytes). */
__attribute__((noinline)) int shape_frame(struct __sk_buff* skb, __u64 qp_at) {
  if (!skb) return TC_ACT_OK;
  __u32 key = skb->ifindex;
  struct fabemu_link_cfg* live = bpf_map_lookup_elem(&fabemu_cfg, &key);
  if (!live) return TC_ACT_OK; /* not an emulated port */
  /* A copy, so that a concurrent update from user space cannot change the shape mid-packet. */
  struct fabemu_link_cfg cfg = *live;
  struct fabemu_link_state* st = state_of(key);
  struct fabemu_link_counters* cnt = counters_of(key);
  if (!st || !cnt) return TC_ACT_OK; /* maps full: pass rather than black-hole the port */
  struct frame f = {};
  f.v = PASS;
  classify(skb, &cfg, st, &f);
  schedule(&cfg, st, &f);
  /* A paced QP's frame leaves no earlier than its rate allows. The link counted its time on the
   * wire from its turn (the bytes the link serves), so the QP leaves the wire to the others
   * meanwhile; the frame leaves when both allow. */
  if (qp_at && f.tstamp) {
    const __u64 tx = f.rate ? f.wire * NS_PER_SEC_BITS / f.rate : 0;
    if (qp_at + tx > f.done) f.tstamp += qp_at + tx - f.done;
  }
  return carry_out(skb, &cfg, cnt, key, &f);
}

SEC("tc")
int fabemu_shape(struct __sk_buff* skb) {
  __u32 key = skb->ifindex;
  struct fabemu_link_cfg* live = bpf_map_lookup_elem(&fabemu_cfg, &key);
  if (!live) return TC_ACT_OK; /* not an emulated port */
  /* DCQCN's reaction point at a host's own port: when the frame's QP may send it. */
  __u64 qp_at = 0;
  if (live->flags & FABEMU_LINK_DCQCN)
    qp_at = dcqcn_egress(skb, key, bpf_ktime_get_ns(), (__u64)skb->len + live->overhead_bytes);
  return shape_frame(skb, qp_at);
}

/* Load balancing at switch ports' ingress (fabric.load_balance). */
#include "load_balance.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";
