// token-sync's program, libexec/xpu-k8s-shim/token-sync, which `xpu-k8s-shim token-sync` runs
// (k8s-shim/role_program.h). It reads no cards: the role parses its own arguments.
#include "k8s-shim/role_program.h"
#include "k8s-shim/roles.h"

int main(int argc, char** argv) {
  return shim::run_role_program("token-sync", argc, argv, shim::run_token_sync);
}
