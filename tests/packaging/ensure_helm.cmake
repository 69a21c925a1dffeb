# Makes sure ${HELM} is helm ${HELM_VERSION}, building it with `go install` when it is not.
# cmake -DHELM=<path> -DHELM_VERSION=<v3.x.y> -DGO=<go> -P ensure_helm.cmake
# A helm built by `go install` reports only major.minor, so the exact version it was built
# from is kept in a stamp file beside it.
set(stamp "${HELM}.version")
if(EXISTS "${HELM}" AND EXISTS "${stamp}")
  file(READ "${stamp}" built)
  execute_process(COMMAND "${HELM}" version --short RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(rc EQUAL 0 AND built STREQUAL HELM_VERSION)
    message(STATUS "helm ${built} at ${HELM}")
    return()
  endif()
endif()
if(NOT GO OR NOT EXISTS "${GO}")
  message(FATAL_ERROR "helm ${HELM_VERSION} is not at ${HELM} and no Go toolchain was found to build it "
                      "(scripts/go found none at configure time: see its warning)")
endif()
get_filename_component(bin_dir "${HELM}" DIRECTORY)
file(MAKE_DIRECTORY "${bin_dir}")
message(STATUS "building helm ${HELM_VERSION} into ${bin_dir} (first run only)")
# Without debug information (-dwarf=false, -s -w) or inlining (-l): a test tool, built on every
# fresh machine, that nobody runs under a debugger. The node's programs take the same -gcflags
# (tests/cluster/build-node.sh), so the standard library compiles once for both.
execute_process(COMMAND ${CMAKE_COMMAND} -E env GOBIN=${bin_dir} GOFLAGS=-p=2
                        "${GO}" install -trimpath -ldflags=-s\ -w "-gcflags=all=-dwarf=false -l"
                        helm.sh/helm/v3/cmd/helm@${HELM_VERSION}
                WORKING_DIRECTORY "${bin_dir}"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "go install helm.sh/helm/v3/cmd/helm@${HELM_VERSION} failed (${rc})")
endif()
execute_process(COMMAND "${HELM}" version --short RESULT_VARIABLE rc OUTPUT_VARIABLE have)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the helm just built at ${HELM} does not run")
endif()
file(WRITE "${stamp}" "${HELM_VERSION}")
message(STATUS "helm ${have}")
