# gRPC (its build without TLS: every gRPC peer of the shim is a kubelet socket
# on the node), protobuf, Abseil, upb, c-ares, re2 and address_sorting, linked from their static
# archives into each program of the shim.
#
# Why: linked as Debian's shared libraries, loading them costs each role about 7 MiB of resident
# memory before it does anything (the dynamic loader relocates libgrpc's whole data, and 60 more
# libraries each bring their pages; bench/RESULTS.md), more than a role's own work. A static
# link keeps only the objects a program uses, and the TLS build drops libssl and libcrypto.
# Every archive is from the same Debian packages as the shared libraries (the -dev packages ship
# both), so versions, headers and licences are those of the shared build (debian/copyright).
#
# The archives are found beside the shared libraries the packages' own CMake files name
# (IMPORTED_LOCATION), so a cross build takes its root's. The C library, libm, libdl, librt,
# threads and zlib stay shared.

# Collects, depth first, the link items of `target` into the list variable `out`.
function(_xpu_static_link_items target out)
  set(items ${${out}})
  get_target_property(type ${target} TYPE)
  if(NOT type STREQUAL "INTERFACE_LIBRARY")
    foreach(property IMPORTED_LOCATION_NONE IMPORTED_LOCATION_RELEASE IMPORTED_LOCATION_RELWITHDEBINFO
                     IMPORTED_LOCATION)
      get_target_property(location ${target} ${property})
      if(location)
        break()
      endif()
    endforeach()
    if(NOT location)
      message(FATAL_ERROR "${target}: no library file named in its CMake package")
    endif()
    get_filename_component(directory "${location}" DIRECTORY)
    get_filename_component(file "${location}" NAME)
    string(REGEX REPLACE "\\.so(\\..*)?$" "" stem "${file}")
    set(archive "${directory}/${stem}.a")
    if(NOT EXISTS "${archive}")
      message(FATAL_ERROR "${target}: no static archive ${archive} beside ${location} (install "
                          "the package's -dev package, which ships it)")
    endif()
    if(NOT archive IN_LIST items)
      list(APPEND items "${archive}")
    endif()
  endif()
  get_target_property(dependencies ${target} INTERFACE_LINK_LIBRARIES)
  if(dependencies)
    foreach(dependency IN LISTS dependencies)
      if(dependency MATCHES "^(ZLIB::ZLIB|Threads::Threads)$")
        list(APPEND _xpu_shared_items ${dependency})
      elseif(TARGET ${dependency})
        get_target_property(seen ${dependency} _XPU_STATIC_SEEN)
        if(NOT seen)
          set_target_properties(${dependency} PROPERTIES _XPU_STATIC_SEEN TRUE)
          _xpu_static_link_items(${dependency} items)
        endif()
      elseif(dependency MATCHES "^-Wl,|^-l")
        # -latomic between --push-state/--pop-state (Abseil's): the toolchain's own library.
      else()
        list(APPEND _xpu_shared_items ${dependency})  # dl, m, rt
      endif()
    endforeach()
  endif()
  set(${out} ${items} PARENT_SCOPE)
  set(_xpu_shared_items ${_xpu_shared_items} PARENT_SCOPE)
endfunction()

# xpu::grpc: the above, or Debian's shared libraries in the sanitizer builds (XPU_INSTRUMENTED),
# which test our code and not how it is linked: the TSan
# suppressions name the uninstrumented libraries by file (tests/tsan.supp, called_from_lib).
function(xpu_add_grpc)
  add_library(xpu-grpc INTERFACE)
  add_library(xpu::grpc ALIAS xpu-grpc)
  if(XPU_INSTRUMENTED)
    target_link_libraries(xpu-grpc INTERFACE gRPC::grpc++ protobuf::libprotobuf)
    message(STATUS "gRPC and protobuf linked as shared libraries (a sanitizer build)")
    return()
  endif()
  find_package(ZLIB REQUIRED)
  find_package(Threads REQUIRED)
  set(archives "")
  set(_xpu_shared_items "")
  foreach(root gRPC::grpc++_unsecure protobuf::libprotobuf)
    _xpu_static_link_items(${root} archives)
  endforeach()
  list(REMOVE_DUPLICATES _xpu_shared_items)
  # The headers as the imported targets give them (read here: imported targets are visible only
  # in this directory, the interface target everywhere).
  foreach(root gRPC::grpc++_unsecure protobuf::libprotobuf)
    get_target_property(includes ${root} INTERFACE_INCLUDE_DIRECTORIES)
    if(includes)
      target_include_directories(xpu-grpc SYSTEM INTERFACE ${includes})
    endif()
  endforeach()
  # One group: Abseil's archives refer to each other in cycles. libatomic as Abseil asks for it.
  target_link_libraries(xpu-grpc INTERFACE
    "-Wl,--start-group" ${archives} "-Wl,--end-group" ${_xpu_shared_items}
    "-Wl,--push-state,--as-needed" "-latomic" "-Wl,--pop-state")
  list(LENGTH archives count)
  message(STATUS "gRPC and protobuf linked statically: ${count} archives")
endfunction()
