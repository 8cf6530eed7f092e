/* DCQCN for soft-RoCE (rdma: {cc: dcqcn}): the map layout shared by link_shaper.bpf.c's
 * programs and the C++ side, and the reaction point's rate machine itself, in plain C that both
 * compile (the unit tests run the datapath's own arithmetic against a reference).
 *
 * The roles, as a ConnectX NIC plays them (DCQCN, SIGCOMM'15; its Mellanox variant as HPCC's
 * ns-3 models it):
 * - Notification point, at a host port's ingress: a RoCEv2 frame that arrives CE-marked is
 *   answered with a CNP (BTH opcode 0x81) to its sender, at most one per QP per cnp_interval.
 * - Reaction point, at a host port's egress: each QP (keyed by the peer's address and the
 *   destination QP its frames carry) is paced at its current rate Rc (EDT: its frames get a
 *   departure time, the link model's fq releases them). A CNP sets the QP's CNP flags; every
 *   alpha interval alpha = (1 - g) alpha + g flag; every decrease interval, if a CNP came,
 *   Rt = Rc (after the first stage), Rc = max(min, Rc (1 - alpha / 2)) and the increase timer
 *   restarts; every rp_timer Rc recovers towards Rt: F rounds of fast recovery
 *   (Rc = (Rc + Rt) / 2), one of additive increase (Rt += ai), then hyper increase (Rt += hai).
 *   With a byte counter B (the paper's; ConnectX's rpg_byte_reset; HPCC's ns-3 has none), every
 *   B bytes the QP sends is an increase event too, counted in a stage of its own: fast recovery
 *   while both stages are below F, hyper increase once both are above it, additive between.
 *   A QP that never saw a CNP sends at the line rate.
 *
 * The timers are not BPF timers: the machine is advanced to `now` whenever the QP sends or a CNP
 * arrives, replaying the timer events that fell due in between in the order the timers would
 * have fired them. What a QP sends depends only on its rate at the moments it sends, so this is
 * the same machine without a timer callback per QP per microsecond of a dilated lab. Telemetry
 * advances a copy to the moment it reads. */
#ifndef FABEMU_EBPF_DCQCN_H_
#define FABEMU_EBPF_DCQCN_H_

#include <linux/types.h>

/* alpha and g are fractions with 1.0 = 1 << FABEMU_DCQCN_ONE_SHIFT. */
#define FABEMU_DCQCN_ONE_SHIFT 24
#define FABEMU_DCQCN_ONE (1ULL << FABEMU_DCQCN_ONE_SHIFT)
/* Timer events replayed one by one per advance; the rest wait for the next one (rate increases
 * after a long idle: each 300 us of idle is one). */
#define FABEMU_DCQCN_MAX_EVENTS 32
#define FABEMU_DCQCN_MAX_QPS 16384
#define FABEMU_BTH_OP_CNP 0x81

/* One host port's NIC (key: the port's ifindex, like the link model's). Times in the lab's wall
 * clock (dilated), rates in its bit/s of wire bytes. */
struct fabemu_dcqcn_cfg {
  __u64 line_bps;        /* the QP's ceiling: the port's rate */
  __u64 min_bps;         /* Rc never falls below this */
  __u64 ai_bps;          /* additive increase of Rt */
  __u64 hai_bps;         /* hyper increase of Rt */
  __u64 alpha_ns;        /* alpha's update interval */
  __u64 decrease_ns;     /* the rate decrease check's interval */
  __u64 rp_timer_ns;     /* the rate increase timer */
  __u64 cnp_interval_ns; /* notification point: at most one CNP per QP per this */
  __u64 byte_counter;    /* an increase event per this many bytes sent (0: none) */
  __u32 g;               /* alpha's gain, a fraction of FABEMU_DCQCN_ONE */
  __u32 fast_recovery;   /* F: rounds of fast recovery before additive increase */
  __u32 clamp_target;    /* 1: every decrease sets Rt = Rc (else not in the first stage) */
  __u32 initial_alpha;   /* alpha at a QP's first CNP, a fraction of FABEMU_DCQCN_ONE */
};

/* A QP as its sender's NIC sees it: the peer's IPv4 address and the destination QP number its
 * frames carry, on the port `ifindex`. A CNP names the same pair from the other side (its source
 * address and the QP number it carries). */
struct fabemu_dcqcn_key {
  __u32 ifindex;
  __u32 peer; /* IPv4, network order */
  __u32 qpn;  /* 24 bits */
  __u32 pad;
};

/* The reaction point's state of one QP; started (alpha_at != 0) by its first CNP. */
struct fabemu_dcqcn_qp {
  __u64 rate_bps;   /* Rc */
  __u64 target_bps; /* Rt */
  __u64 alpha;      /* a fraction of FABEMU_DCQCN_ONE */
  __u64 alpha_at;   /* the next alpha update (0: no CNP yet: the line rate) */
  __u64 decrease_at;
  __u64 increase_at;  /* the next rate increase (0: none armed) */
  __u32 stage;        /* timer increase events since the last decrease */
  __u32 alpha_cnp;    /* a CNP came since the last alpha update */
  __u32 decrease_cnp; /* ... since the last decrease check */
  __u32 byte_stage;   /* byte counter increase events since the last decrease */
  __u64 byte_count;   /* bytes sent towards the byte counter's next event */
  __u64 next_send_ns; /* pacing: the QP's next frame may leave from then */
  __u64 cnps;         /* CNPs received */
  __u64 decreases;    /* rate decreases applied */
  __u64 packets, bytes;
  __u64 last_ns; /* the last frame or CNP */
};

/* Per-CPU counters of a host port's NIC; user space sums the CPUs. */
struct fabemu_dcqcn_counters {
  __u64 cnps_sent;     /* notification point */
  __u64 cnps_received; /* reaction point */
  __u64 ce_received;   /* CE-marked RoCEv2 frames that arrived */
  __u64 cnps_held;     /* CE frames within a QP's CNP interval: no CNP */
  __u64 paced;         /* frames the reaction point held back */
  __u64 untracked;     /* frames and CNPs of QPs beyond FABEMU_DCQCN_MAX_QPS: not paced */
};

/* skb->mark bit of the clone of a CE-marked frame on its way back through the ingress, where it
 * becomes the CNP that answers it (the mark stays in the namespace: a veth scrubs it). */
#define FABEMU_CNP_MARK 0x20000000U

/* Notification point: when this port last sent a CNP for the QP (key as the data frames' sender
 * names it: the data's source address and destination QP). */
struct fabemu_dcqcn_np {
  __u64 last_cnp_ns;
};

/* In BPF the two functions with loops are global functions, which the verifier checks once
 * each instead of again at every call site (inlined, Linux 6.1 gave up at a million
 * instructions). */
#ifdef __cplusplus
#define FABEMU_DCQCN_INLINE static inline
#define FABEMU_DCQCN_GLOBAL static inline
#else
#define FABEMU_DCQCN_INLINE static __always_inline
#define FABEMU_DCQCN_GLOBAL __attribute__((noinline))
#endif

FABEMU_DCQCN_INLINE __u64 fabemu_dcqcn_min(__u64 a, __u64 b) {
  return a < b ? a : b;
}

/* x * f for a fraction f <= 1.0 of FABEMU_DCQCN_ONE, without overflow for x < 2^63. */
FABEMU_DCQCN_INLINE __u64 fabemu_dcqcn_scale(__u64 x, __u64 f) {
  return (x >> FABEMU_DCQCN_ONE_SHIFT) * f +
         (((x & (FABEMU_DCQCN_ONE - 1)) * f) >> FABEMU_DCQCN_ONE_SHIFT);
}

/* The alpha updates due by `t` (those at or before it), the first with the CNP flag. */
FABEMU_DCQCN_GLOBAL int fabemu_dcqcn_alpha_to(const struct fabemu_dcqcn_cfg* c,
                                              struct fabemu_dcqcn_qp* q, __u64 t) {
  if (!c || !q || !q->alpha_at || q->alpha_at > t || !c->alpha_ns) return 0;
  __u64 n = (t - q->alpha_at) / c->alpha_ns + 1;
  const __u64 keep = FABEMU_DCQCN_ONE - c->g;
  q->alpha = fabemu_dcqcn_scale(q->alpha, keep) + (q->alpha_cnp ? c->g : 0);
  q->alpha_cnp = 0;
  q->alpha_at += n * c->alpha_ns;
  /* The other n - 1 without a CNP: alpha (1 - g)^(n - 1), by squaring. */
  __u64 k = n - 1, f = keep, pow = FABEMU_DCQCN_ONE;
  for (int i = 0; i < 40 && k; i++) {
    if (k & 1) pow = fabemu_dcqcn_scale(pow, f);
    f = fabemu_dcqcn_scale(f, f);
    k >>= 1;
  }
  if (k) pow = 0; /* (1 - g)^(2^40): nothing is left */
  q->alpha = fabemu_dcqcn_scale(q->alpha, pow);
  return 0;
}

/* One rate increase event, of the timer or (`bytes`) of the byte counter: fast recovery,
 * additive or hyper increase by the stages. */
FABEMU_DCQCN_INLINE void fabemu_dcqcn_increase(const struct fabemu_dcqcn_cfg* c,
                                               struct fabemu_dcqcn_qp* q, int bytes) {
  /* The lower and higher of the two stages (the timer's alone without a byte counter). */
  const int both = c->byte_counter != 0;
  const __u32 lo = both && q->byte_stage < q->stage ? q->byte_stage : q->stage;
  const __u32 hi = both && q->byte_stage > q->stage ? q->byte_stage : q->stage;
  if (lo > c->fast_recovery)
    q->target_bps += c->hai_bps;
  else if (hi >= c->fast_recovery)
    q->target_bps += c->ai_bps;
  q->target_bps = fabemu_dcqcn_min(q->target_bps, c->line_bps);
  /* Rounded up, so that Rc reaches Rt instead of stopping a bit/s short. */
  q->rate_bps = (q->rate_bps + q->target_bps + 1) / 2;
  __u32* stage = bytes ? &q->byte_stage : &q->stage;
  if (*stage < 0xffffffffU) (*stage)++;
}

/* The decrease check at `t` that finds a CNP. */
FABEMU_DCQCN_INLINE void fabemu_dcqcn_decrease(const struct fabemu_dcqcn_cfg* c,
                                               struct fabemu_dcqcn_qp* q, __u64 t) {
  fabemu_dcqcn_alpha_to(c, q, t);
  if (c->clamp_target || q->stage || q->byte_stage) q->target_bps = q->rate_bps;
  __u64 cut = q->rate_bps - fabemu_dcqcn_scale(q->rate_bps, q->alpha / 2);
  q->rate_bps = cut > c->min_bps ? cut : c->min_bps;
  q->stage = q->byte_stage = 0;
  q->byte_count = 0;
  q->decrease_cnp = 0;
  q->decreases++;
  q->increase_at = t + c->rp_timer_ns;
}

/* The machine's timer events due by `now`, in the order the timers fire them: the decrease
 * check that finds a CNP (only the first check after a CNP can), the rate increases, and the
 * alpha updates between them. */
FABEMU_DCQCN_GLOBAL int fabemu_dcqcn_advance(const struct fabemu_dcqcn_cfg* c,
                                             struct fabemu_dcqcn_qp* q, __u64 now) {
  if (!c || !q || !q->alpha_at || !c->decrease_ns || !c->rp_timer_ns) return 0;
  for (int i = 0; i < FABEMU_DCQCN_MAX_EVENTS; i++) {
    const __u64 dec = q->decrease_cnp ? q->decrease_at : ~0ULL;
    const __u64 inc = q->increase_at ? q->increase_at : ~0ULL;
    if (dec <= inc && dec <= now) {
      fabemu_dcqcn_decrease(c, q, dec);
      q->decrease_at = dec + c->decrease_ns;
    } else if (inc < dec && inc <= now) {
      fabemu_dcqcn_increase(c, q, 0);
      q->increase_at = inc + c->rp_timer_ns;
    } else {
      break;
    }
  }
  /* Increases still due after a long idle, past fast recovery (or at the line rate): Rt
   * reaches the line rate after k of them (each adds hai, or ai while the byte counter's stage,
   * which an idle QP does not move, is not above F), and every one after halves Rc's gap to it,
   * which is gone after 64. With that many due the QP is back at the line rate. */
  if (q->increase_at && q->increase_at <= now && !q->decrease_cnp &&
      (q->stage > c->fast_recovery || q->target_bps >= c->line_bps)) {
    const __u64 n = (now - q->increase_at) / c->rp_timer_ns + 1;
    const __u64 gap = c->line_bps > q->target_bps ? c->line_bps - q->target_bps : 0;
    const __u64 step =
        !c->byte_counter || q->byte_stage > c->fast_recovery ? c->hai_bps : c->ai_bps;
    const __u64 k = gap && step ? (gap + step - 1) / step : gap ? ~0ULL >> 1 : 0;
    if (n >= k + 64) {
      q->rate_bps = q->target_bps = c->line_bps;
      q->stage = q->stage + n < 0xffffffffULL ? (__u32)(q->stage + n) : 0xffffffffU;
      q->increase_at += n * c->rp_timer_ns;
    }
  }
  if (!q->decrease_cnp && q->decrease_at <= now)
    q->decrease_at += ((now - q->decrease_at) / c->decrease_ns + 1) * c->decrease_ns;
  if (!q->decrease_cnp || q->decrease_at > now) fabemu_dcqcn_alpha_to(c, q, now);
  return 0;
}

/* A CNP for the QP at `now`. */
FABEMU_DCQCN_INLINE void fabemu_dcqcn_cnp(const struct fabemu_dcqcn_cfg* c,
                                          struct fabemu_dcqcn_qp* q, __u64 now) {
  fabemu_dcqcn_advance(c, q, now);
  q->cnps++;
  q->last_ns = now;
  q->alpha_cnp = 1;
  q->decrease_cnp = 1;
  if (!q->alpha_at) {
    /* The first CNP: alpha starts at its initial value (1 unless configured), the timers from
     * now, Rt at the rate the QP had. */
    q->alpha = c->initial_alpha ? c->initial_alpha : FABEMU_DCQCN_ONE;
    q->alpha_cnp = 0;
    q->alpha_at = now + c->alpha_ns;
    q->decrease_at = now + c->decrease_ns + 1; /* after the alpha update due then */
    q->rate_bps = q->target_bps = c->line_bps;
    q->increase_at = 0;
  }
}

/* The QP's rate at `now` (the line rate before its first CNP). */
FABEMU_DCQCN_INLINE __u64 fabemu_dcqcn_rate(const struct fabemu_dcqcn_cfg* c,
                                            struct fabemu_dcqcn_qp* q, __u64 now) {
  fabemu_dcqcn_advance(c, q, now);
  return q->alpha_at ? q->rate_bps : c->line_bps;
}

/* A frame of `wire_bytes` the QP sends at `now`: when it may leave (pacing at the QP's rate). */
FABEMU_DCQCN_INLINE __u64 fabemu_dcqcn_pace(const struct fabemu_dcqcn_cfg* c,
                                            struct fabemu_dcqcn_qp* q, __u64 now,
                                            __u64 wire_bytes) {
  const __u64 rate = fabemu_dcqcn_rate(c, q, now);
  const __u64 at = q->next_send_ns > now ? q->next_send_ns : now;
  /* wire_bytes < 2^24 keeps the product below 2^64. */
  q->next_send_ns = at + (rate ? wire_bytes * 8000000000ULL / rate : 0);
  q->packets++;
  q->bytes += wire_bytes;
  q->last_ns = now;
  /* The byte counter: an increase event once the QP has sent its bytes since the last. */
  if (c->byte_counter && q->alpha_at) {
    q->byte_count += wire_bytes;
    if (q->byte_count >= c->byte_counter) {
      q->byte_count = 0;
      fabemu_dcqcn_increase(c, q, 1);
    }
  }
  return at;
}

#endif /* FABEMU_EBPF_DCQCN_H_ */
