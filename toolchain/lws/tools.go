//go:build tools

// Package tools pins the LeaderWorkerSet controller manager (its main package is sigs.k8s.io/lws/cmd), run out of
// cluster by scripts/local-cluster.
package tools

import (
	_ "sigs.k8s.io/lws/cmd"
)
