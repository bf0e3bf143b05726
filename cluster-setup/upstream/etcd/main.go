// The etcd server, as etcd's own main.go starts it (its root module is not published for 3.7).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
