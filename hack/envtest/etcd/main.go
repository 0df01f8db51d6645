// Command etcd is the etcd server used by the test control plane. It exists so
// that `make envtest-assets` can build etcd from Go modules instead of
// downloading a release binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
