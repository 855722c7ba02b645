//go:build tools

// Package tools pins etcd, the local cluster's store (scripts/local-cluster).
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
