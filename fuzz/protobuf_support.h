// For the fuzzers whose input is a protobuf message (the kubelet's replies and requests).
#pragma once

#include <google/protobuf/stubs/logging.h>

#include "fuzz/fuzz_support.h"

namespace xpu::fuzz {

// protobuf logs every string field that is not UTF-8 (and parses it anyway): our code must cope
// with those bytes, and the log would bury the fuzzer's report.
inline void quiet_logging_and_protobuf() {
  quiet_logging();
  google::protobuf::SetLogHandler(nullptr);
}

}  // namespace xpu::fuzz
