// The pause container of the real-node tests (test/integration/e2e): what registry.k8s.io/pause
// does, in Go instead of C, so that no image has to be pulled. As the pod's infra container (PID 1
// of its PID namespace when shared) it sleeps, reaps the zombies it inherits, and exits 0 on
// SIGINT or SIGTERM. Built static (CGO_ENABLED=0) by test/setup.d/60-real-node.sh and packed as
// the OCI archive of registry.k8s.io/pause:3.10, containerd 1.6's sandbox_image.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		os.Stdout.WriteString("pause (metallb-ts tests)\n")
		return
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
