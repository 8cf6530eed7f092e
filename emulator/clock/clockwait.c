// libfabemu-clockwait.so: the timed waits libfaketime 0.9.10 (Debian 12's) leaves alone, for
// programs that run on the real fabric's clock (`hosts: {clock: fabric}`).
//
// libfaketime makes CLOCK_MONOTONIC and CLOCK_REALTIME pass N times slower and converts the
// deadlines of the waits it knows (pthread_cond_timedwait, sem_timedwait, clock_nanosleep...).
// glibc 2.30's *_clockwait calls and pthread_mutex_timedlock it does not know: they get a
// deadline read from the slowed clock, whose monotonic readings start at the epoch, and wait on
// the kernel's, which is decades behind, so a timeout never fires (Python's Event.wait(1),
// Lock.acquire(timeout=), queue.get(timeout=); C++'s condition_variable::wait_for). Here each
// deadline becomes the kernel's: now + (deadline - the program's now) x N.
//
// Preloaded after libfaketime (LD_PRELOAD="libfaketime.so.1:libfabemu-clockwait.so"), so that
// clock_gettime below is libfaketime's; the factor N is FABEMU_TIME_SCALE, which every host has.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double time_scale = 1;

__attribute__((constructor)) static void read_time_scale(void) {
  const char* s = getenv("FABEMU_TIME_SCALE");
  double n = s ? strtod(s, NULL) : 1;
  if (n > 1) time_scale = n;
}

static int64_t ns_of(const struct timespec* t) {
  return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

// The kernel's deadline for `deadline` on the program's (slowed) `clock`.
static struct timespec kernel_deadline(clockid_t clock, const struct timespec* deadline) {
  struct timespec seen, kernel;
  clock_gettime(clock, &seen);                 // the program's clock: libfaketime's
  syscall(SYS_clock_gettime, clock, &kernel);  // the kernel's, as the wait reads it
  int64_t left = ns_of(deadline) - ns_of(&seen);
  if (left < 0) left = 0;
  const int64_t at = ns_of(&kernel) + (int64_t)((double)left * time_scale);
  struct timespec out = {at / 1000000000, at % 1000000000};
  return out;
}

static int slowed(clockid_t clock) {
  return time_scale > 1 && (clock == CLOCK_MONOTONIC || clock == CLOCK_REALTIME);
}

int sem_clockwait(sem_t* sem, clockid_t clock, const struct timespec* deadline) {
  static int (*next)(sem_t*, clockid_t, const struct timespec*);
  if (!next) next = dlsym(RTLD_NEXT, "sem_clockwait");
  if (!slowed(clock)) return next(sem, clock, deadline);
  const struct timespec at = kernel_deadline(clock, deadline);
  return next(sem, clock, &at);
}

int pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock,
                           const struct timespec* deadline) {
  static int (*next)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const struct timespec*);
  if (!next) next = dlsym(RTLD_NEXT, "pthread_cond_clockwait");
  if (!slowed(clock)) return next(cond, mutex, clock, deadline);
  const struct timespec at = kernel_deadline(clock, deadline);
  return next(cond, mutex, clock, &at);
}

int pthread_mutex_clocklock(pthread_mutex_t* mutex, clockid_t clock,
                            const struct timespec* deadline) {
  static int (*next)(pthread_mutex_t*, clockid_t, const struct timespec*);
  if (!next) next = dlsym(RTLD_NEXT, "pthread_mutex_clocklock");
  if (!slowed(clock)) return next(mutex, clock, deadline);
  const struct timespec at = kernel_deadline(clock, deadline);
  return next(mutex, clock, &at);
}

int pthread_mutex_timedlock(pthread_mutex_t* mutex, const struct timespec* deadline) {
  static int (*next)(pthread_mutex_t*, const struct timespec*);
  if (!next) next = dlsym(RTLD_NEXT, "pthread_mutex_timedlock");
  if (!slowed(CLOCK_REALTIME)) return next(mutex, deadline);
  const struct timespec at = kernel_deadline(CLOCK_REALTIME, deadline);
  return next(mutex, &at);
}
