// Package iptables is the test node's stand-in for sigs.k8s.io/iptables-wrappers/pkg/iptables:
// the names the kubelet uses, on a host where no iptables is found (../../go.mod says why).
package iptables

import (
	"context"
	"time"
)

// Protocol is an IP family.
type Protocol string

// Table is an iptables table.
type Table string

// Chain is an iptables chain.
type Chain string

// RulePosition says where a rule goes in its chain.
type RulePosition string

// Mode says how the iptables binaries are chosen.
type Mode int

// The names the kubelet uses.
const (
	ProtocolIPv4 Protocol = "IPv4"
	ProtocolIPv6 Protocol = "IPv6"

	TableFilter Table = "filter"
	TableMangle Table = "mangle"
	TableNAT    Table = "nat"

	ChainInput  Chain = "INPUT"
	ChainOutput Chain = "OUTPUT"

	Prepend RulePosition = "-I"
	Append  RulePosition = "-A"

	UseInstalledMode Mode = iota
)

// Interface is what the kubelet asks of one family's iptables.
type Interface interface {
	EnsureChain(ctx context.Context, table Table, chain Chain) (bool, error)
	EnsureRule(ctx context.Context, position RulePosition, table Table, chain Chain, args ...string) (bool, error)
	IsIPv6() bool
	Protocol() Protocol
	Monitor(ctx context.Context, canary Chain, tables []Table, reloadFunc func(), interval time.Duration)
}

// NewBestEffort returns a client per IP family whose iptables works: none on this node.
func NewBestEffort(_ context.Context, _ Mode) map[Protocol]Interface {
	return map[Protocol]Interface{}
}
