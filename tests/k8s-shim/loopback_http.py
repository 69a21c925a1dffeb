"""How the shim tests' stand-in HTTP servers (kube/echo_server.py, node_status/node_server.py)
run: on a free loopback port, which they write to a file once listening (renamed into place, so
the test never reads half a number), until the process that started them is gone."""
import http.server
import os
import threading
import time


def _exit_with_parent(parent):
    while os.getppid() == parent:
        time.sleep(0.2)
    os._exit(0)


def serve(handler_class, port_file):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler_class)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()
