// One API call over a transport: the request sent, a 2xx answer's body returned, anything else an
// ApiError naming the method and the target (and, when the server said so, its Status).
#pragma once

#include <string>

#include "k8s-shim/kube/api_error.h"
#include "k8s-shim/kube/http_transport.h"

namespace shim::kube {

ApiResult<std::string> call(HttpTransport& transport, std::string method, std::string target,
                            std::string body, std::string content_type = {});

}  // namespace shim::kube
