// Generators: one function per topology kind, spec in, graph out (names per DESIGN.md).
#pragma once

#include "model/topology.h"

namespace fabemu {

Topology generate_leaf_spine(const LeafSpineSpec& spec);
Topology generate_fat_tree(const FatTreeSpec& spec);
Topology generate_rail_optimized(const RailOptimizedSpec& spec);
// Assumes the loader already checked names are unique and links name declared nodes.
Topology generate_explicit(const ExplicitSpec& spec);

}  // namespace fabemu
