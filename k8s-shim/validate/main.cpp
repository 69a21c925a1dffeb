// validate's program, libexec/xpu-k8s-shim/validate, which `xpu-k8s-shim validate` runs
// (k8s-shim/role_program.h). It reads the cards it was given, not xpud's: the role parses its
// own arguments.
#include "k8s-shim/role_program.h"
#include "k8s-shim/roles.h"

int main(int argc, char** argv) {
  return shim::run_role_program("validate", argc, argv, shim::run_validate);
}
