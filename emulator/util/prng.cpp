// splitmix64 and FNV-1a: stable across builds and machines, unlike std::hash.
#include "util/prng.h"

namespace fabemu {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t fnv1a(std::string_view data) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : data) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

uint64_t link_seed(uint64_t scenario_seed, std::string_view name) {
  return splitmix64(scenario_seed ^ splitmix64(fnv1a(name)));
}

}  // namespace fabemu
