// Command etcd is etcd's server at the version go.mod pins, built from the Go module proxy.
// go.etcd.io/etcd/v3 (the module with etcd's own main) points its sibling modules at local
// paths, so it cannot be go-installed; the server module's etcdmain is the whole program.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
