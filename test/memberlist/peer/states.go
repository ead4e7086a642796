package main

import (
	"reflect"
	"sort"
	"unsafe"

	"github.com/hashicorp/memberlist"
)

// allStates reads every node state memberlist holds (alive, suspect, dead, left) with its
// incarnation. memberlist exports no such view, so this reads its unexported nodes table
// through reflection (test program only).
func allStates(ml *memberlist.Memberlist) []member {
	v := reflect.ValueOf(ml).Elem()
	mu := v.FieldByName("nodeLock")
	rw := reflect.NewAt(mu.Type(), unsafe.Pointer(mu.UnsafeAddr())).Interface().(interface {
		RLock()
		RUnlock()
	})
	rw.RLock()
	defer rw.RUnlock()
	nodes := v.FieldByName("nodes")
	out := []member{}
	for i := 0; i < nodes.Len(); i++ {
		ns := nodes.Index(i).Elem()
		nf := ns.FieldByName("Node")
		n := reflect.NewAt(nf.Type(), unsafe.Pointer(nf.UnsafeAddr())).Interface().(*memberlist.Node)
		inc := ns.FieldByName("Incarnation").Uint()
		st := ns.FieldByName("State").Int()
		out = append(out, member{n.Name, n.Addr.String(), n.Port, states[st], uint32(inc)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
