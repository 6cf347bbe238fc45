// Command etcd is the etcd server pinned for Berth's tests and local
// cluster. The etcd server module has no installable main of its own, so
// this one hands its arguments to etcdmain.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
