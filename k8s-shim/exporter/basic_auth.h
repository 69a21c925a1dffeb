// Basic-auth passwords checked against bcrypt hashes with crypt(3) (libxcrypt, which reads
// $2a$, $2b$ and $2y$), the hashes exporter-toolkit's basic_auth_users holds. The server checks
// them through PasswordChecker (password_checker.h), off its event threads.
#pragma once

#include <string>

#include "common/result.h"

namespace shim::exporter {

// Whether `hash` is a bcrypt hash crypt(3) can check against.
xpu::Status check_bcrypt_hash(const std::string& hash);

// Whether `password` is the one `hash` was made from. Costs one bcrypt round of the hash's cost;
// the comparison takes the same time wherever the results differ.
bool bcrypt_matches(const std::string& password, const std::string& hash);

}  // namespace shim::exporter
