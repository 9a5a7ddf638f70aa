// The entry of a thread started through _thread directly (see thread_entry.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace spyglass {

void add_thread_entry(pybind11::module_& m);

}  // namespace spyglass
