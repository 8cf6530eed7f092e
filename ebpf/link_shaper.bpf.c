// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The link model at the egress of an emulated port: down, rate (EDT virtual clock), queue
 * limit, loss, ECN marking, delay and jitter, and per-port counters. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#include <bpf/bpf_helpers.h>

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
  __type(value, struct fabemu_link_cfg);
} fabemu_cfg SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FABEMU_MAX_LINKS);
  __type(key, __u32);
  __type(value, struct fabemu_link_state);
} fabemu_state SEC(".maps");

/* Per-CPU so that the hot path never contends on counters. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, FABEMU_MAX_LINKS);
  __type(key, __u32);
  __type(value, struct fabemu_link_counters);
} fabemu_counters SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, FABEMU_MAX_LINKS);
  __type(key, __u32);
  __type(value, struct fabemu_port);
} fabemu_ports SEC(".maps");

enum verdict { PASS, DROP_DOWN, DROP_LOSS, DROP_QUEUE };

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
static __always_inline struct fabemu_link_state* state_of(__u32 key) {
  struct fabemu_link_state* st = bpf_map_lookup_elem(&fabemu_state, &key);
  if (st) return st;
  struct fabemu_link_state zero;
  __builtin_memset(&zero, 0, sizeof(zero));
  bpf_map_update_elem(&fabemu_state, &key, &zero, BPF_NOEXIST);
  return bpf_map_lookup_elem(&fabemu_state, &key);
}

static __always_inline struct fabemu_link_counters* counters_of(__u32 key) {
  struct fabemu_link_counters* c = bpf_map_lookup_elem(&fabemu_counters, &key);
  if (c) return c;
  struct fabemu_link_counters zero;
  __builtin_memset(&zero, 0, sizeof(zero));
  bpf_map_update_elem(&fabemu_counters, &key, &zero, BPF_NOEXIST);
  return bpf_map_lookup_elem(&fabemu_counters, &key);
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

SEC("tc")
int fabemu_shape(struct __sk_buff* skb) {
  __u32 key = skb->ifindex;
  struct fabemu_link_cfg* live = bpf_map_lookup_elem(&fabemu_cfg, &key);
  if (!live) return TC_ACT_OK; /* not an emulated port */
  /* A copy, so that a concurrent update from user space cannot change the shape mid-packet. */
  struct fabemu_link_cfg cfg = *live;
  struct fabemu_link_state* st = state_of(key);
  struct fabemu_link_counters* cnt = counters_of(key);
  if (!st || !cnt) return TC_ACT_OK; /* maps full: pass rather than black-hole the port */

  __u64 wire = (__u64)skb->len + cfg.overhead_bytes;
  if (wire > MAX_WIRE_BYTES) wire = MAX_WIRE_BYTES;
  __u64 rate = cfg.rate_bps < MAX_RATE_BPS ? cfg.rate_bps : MAX_RATE_BPS;
  __u64 queue_bytes = cfg.queue_bytes < MAX_QUEUE_BYTES ? cfg.queue_bytes : MAX_QUEUE_BYTES;
  /* The byte limit as time at the current rate: a live rate change rescales it. */
  __u64 queue_bytes_ns = rate && queue_bytes ? queue_bytes * NS_PER_SEC_BITS / rate : 0;
  /* The ECN threshold in bytes (a switch's K), as time at the current rate the same way. */
  __u64 ecn_bytes = cfg.ecn_threshold_bytes < MAX_QUEUE_BYTES ? cfg.ecn_threshold_bytes
                                                              : MAX_QUEUE_BYTES;
  __u64 ecn_bytes_ns = rate && ecn_bytes ? ecn_bytes * NS_PER_SEC_BITS / rate : 0;
  __u64 now = bpf_ktime_get_ns();

  enum verdict v = PASS;
  __u64 wait = 0, tstamp = 0;
  bpf_spin_lock(&st->lock);
  if (!st->seeded || st->seeded_from != cfg.seed) {
    st->prng = cfg.seed;
    st->seeded_from = cfg.seed;
    st->seeded = 1;
    st->ge_bad = 0;
  }
  /* Drawn for every packet, dropped or not, so packet k's fate depends on the seed and k only. */
  int loss = lost(&cfg, st, next_random(&st->prng));
  __u64 jitter_r = cfg.jitter_ns ? next_random(&st->prng) : 0;

  if (cfg.flags & FABEMU_LINK_DOWN) {
    v = DROP_DOWN;
  } else {
    __u64 start = st->next_ns > now ? st->next_ns : now; /* the link is busy until next_ns */
    wait = start - now;
    __u64 rem = st->rate_rem;
    __u64 tx = rate ? tx_ns(wire, rate, &rem) : 0;
    if ((cfg.queue_ns && wait > cfg.queue_ns) || (queue_bytes_ns && wait + tx > queue_bytes_ns)) {
      v = DROP_QUEUE; /* tail drop: the frame never occupies the link */
    } else {
      /* The frame arrives at the far end when its last bit does: end of serialization plus
       * propagation. A frame lost on the wire still used the link. */
      __u64 done = start + tx;
      st->next_ns = done;
      st->rate_rem = rem;
      if (loss) {
        v = DROP_LOSS;
      } else if (!(cfg.flags & FABEMU_LINK_POLICER)) {
        tstamp = done + cfg.delay_ns;
        if (cfg.jitter_ns) {
          __u64 span = 2 * cfg.jitter_ns + 1;
          __u64 offset = jitter_r % span; /* uniform in [0, 2j]; shifted to [-j, +j] */
          tstamp += offset;
          tstamp = tstamp > done + cfg.jitter_ns ? tstamp - cfg.jitter_ns : done;
        }
        if ((cfg.flags & FABEMU_LINK_NO_REORDER) && tstamp < st->last_tstamp)
          tstamp = st->last_tstamp;
        st->last_tstamp = tstamp;
      }
    }
  }
  bpf_spin_unlock(&st->lock);

  switch (v) {
    case DROP_DOWN:
      cnt->drop_down++;
      return TC_ACT_SHOT;
    case DROP_LOSS:
      cnt->drop_loss++;
      return TC_ACT_SHOT;
    case DROP_QUEUE:
      cnt->drop_queue++;
      return TC_ACT_SHOT;
    case PASS:
      break;
  }
  /* bpf_skb_ecn_set_ce marks ECT packets only and says so; CE packets count as marked. */
  if (((cfg.ecn_threshold_ns && wait > cfg.ecn_threshold_ns) ||
       (ecn_bytes_ns && wait > ecn_bytes_ns)) &&
      bpf_skb_ecn_set_ce(skb) == 1)
    cnt->ce_marks++;
  /* Without rate, delay and jitter there is nothing to schedule: leave the socket's stamp. */
  if (tstamp && (rate || cfg.delay_ns || cfg.jitter_ns)) skb->tstamp = tstamp;
  cnt->packets++;
  cnt->bytes += skb->len;
  cnt->queue_delay_hist[hist_bucket(wait)]++;
  /* ECMP per switch. A veth hands the next namespace the skb with a hash (the sending socket's,
   * or the flow hash RPS computed on the way in, with one key for all namespaces), and a
   * router that finds one uses it instead of hashing the headers with a seed of its own: every
   * tier would choose alike, and a fat-tree's flows between pods would use half its core paths
   * (polarization). The flow's hash mixed with this direction's seed: still one per flow, but
   * each next hop draws its choice afresh, as switches with their own hash seeds do. */
  bpf_set_hash(skb, mix32(bpf_get_hash_recalc(skb) ^ (__u32)(cfg.seed >> 32)));
  return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
