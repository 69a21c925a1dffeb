// Basic-auth passwords checked against bcrypt hashes with crypt(3) (libxcrypt, which reads
// $2a$, $2b$ and $2y$), the hashes exporter-toolkit's basic_auth_users holds.
#pragma once

#include <map>
#include <string>

#include "common/result.h"

namespace shim::exporter {

// Whether `hash` is a bcrypt hash crypt(3) can check against.
xpu::Status check_bcrypt_hash(const std::string& hash);

// Whether `user` is in `users` with this password. Unknown users cost the same bcrypt round as
// known ones, so timing does not tell which user names exist.
bool basic_auth_matches(const std::map<std::string, std::string>& users, const std::string& user,
                        const std::string& password);

}  // namespace shim::exporter
