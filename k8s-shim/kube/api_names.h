// The checks that keep caller-supplied names from reshaping a request target: a name goes into a
// path only when it is a valid Kubernetes name, and query values are percent-encoded.
#pragma once

#include <string>
#include <string_view>

namespace shim::kube {

// RFC 1123 label (namespaces): [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 characters.
bool is_dns_label(std::string_view name);
// RFC 1123 subdomain (object and node names, driver names): dot-separated labels, at most 253.
bool is_dns_subdomain(std::string_view name);

// Every byte but the RFC 3986 unreserved ones (A-Z a-z 0-9 - . _ ~) becomes %XX.
std::string percent_encode(std::string_view text);

}  // namespace shim::kube
