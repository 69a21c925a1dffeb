// Owning handles for the sd-bus and sd-event objects the proxy holds.
#pragma once

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include <memory>

namespace xpu::api_proxy {

template <typename T, T* (*Release)(T*)>
struct SdRelease {
  void operator()(T* p) const {
    if (p) Release(p);
  }
};

// Upstream: queued messages are flushed before close (the proxy's own bus, at exit only).
using FlushingBusPtr = std::unique_ptr<sd_bus, SdRelease<sd_bus, sd_bus_flush_close_unref>>;
// Clients: never flush, a client that stopped reading must not block the proxy.
using BusPtr = std::unique_ptr<sd_bus, SdRelease<sd_bus, sd_bus_close_unref>>;
using MessagePtr = std::unique_ptr<sd_bus_message, SdRelease<sd_bus_message, sd_bus_message_unref>>;
using SlotPtr = std::unique_ptr<sd_bus_slot, SdRelease<sd_bus_slot, sd_bus_slot_unref>>;
using EventPtr = std::unique_ptr<sd_event, SdRelease<sd_event, sd_event_unref>>;
using EventSourcePtr =
    std::unique_ptr<sd_event_source, SdRelease<sd_event_source, sd_event_source_disable_unref>>;

// An sd_bus_error that frees itself.
struct BusError {
  sd_bus_error error = SD_BUS_ERROR_NULL;
  BusError() = default;
  BusError(const BusError&) = delete;
  BusError& operator=(const BusError&) = delete;
  ~BusError() { sd_bus_error_free(&error); }
  sd_bus_error* get() { return &error; }
};

}  // namespace xpu::api_proxy
