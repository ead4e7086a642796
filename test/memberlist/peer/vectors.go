package main

// -vectors mode: reads one request per stdin line and prints one hex line per request, produced
// by the Go libraries memberlist v0.5.1 uses, so metallb-ts's codecs can be compared byte for byte:
//   lzw <hex>            compress/lzw LSB 8 of the bytes
//   msg <type> <json>    memberlist's encode(): type byte + go-msgpack v2 MsgpackHandle{TimeNotBuiltin}
//                        of the struct (ping, indirect, ack, nack, suspect, alive, dead, pushpull, nodestate)
//   key <secret>         MetalLB's key derivation sha256.New().Sum(secret)[:32]

import (
	"bufio"
	"bytes"
	"compress/lzw"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

type vPing struct {
	SeqNo      uint32
	Node       string
	SourceAddr []byte `codec:",omitempty"`
	SourcePort uint16 `codec:",omitempty"`
	SourceNode string `codec:",omitempty"`
}
type vIndirect struct {
	SeqNo      uint32
	Target     []byte
	Port       uint16
	Node       string
	Nack       bool
	SourceAddr []byte `codec:",omitempty"`
	SourcePort uint16 `codec:",omitempty"`
	SourceNode string `codec:",omitempty"`
}
type vAck struct {
	SeqNo   uint32
	Payload []byte
}
type vNack struct{ SeqNo uint32 }
type vSuspect struct {
	Incarnation uint32
	Node        string
	From        string
}
type vAlive struct {
	Incarnation uint32
	Node        string
	Addr        []byte
	Port        uint16
	Meta        []byte
	Vsn         []uint8
}
type vPushPullHeader struct {
	Nodes        int
	UserStateLen int
	Join         bool
}
type vNodeState struct {
	Name        string
	Addr        []byte
	Port        uint16
	Meta        []byte
	Incarnation uint32
	State       int
	Vsn         []uint8
}

func runVectors() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), " ", 3)
		switch parts[0] {
		case "lzw":
			in, _ := hex.DecodeString(parts[1])
			var b bytes.Buffer
			w := lzw.NewWriter(&b, lzw.LSB, 8)
			w.Write(in)
			w.Close()
			fmt.Println(hex.EncodeToString(b.Bytes()))
		case "key":
			s, _ := hex.DecodeString(parts[1])
			fmt.Println(hex.EncodeToString(sha256.New().Sum(s)[:32]))
		case "msg":
			var v interface{}
			var t byte
			switch parts[1] {
			case "ping":
				v, t = &vPing{}, 0
			case "indirect":
				v, t = &vIndirect{}, 1
			case "ack":
				v, t = &vAck{}, 2
			case "suspect":
				v, t = &vSuspect{}, 3
			case "alive":
				v, t = &vAlive{}, 4
			case "dead":
				v, t = &vSuspect{}, 5
			case "pushpull":
				v, t = &vPushPullHeader{}, 6
			case "nack":
				v, t = &vNack{}, 11
			case "nodestate":
				v, t = &vNodeState{}, 255
			}
			if err := json.Unmarshal([]byte(parts[2]), v); err != nil {
				fmt.Println("error", err)
				continue
			}
			var b bytes.Buffer
			if t != 255 {
				b.WriteByte(t)
			}
			hd := codec.MsgpackHandle{BasicHandle: codec.BasicHandle{TimeNotBuiltin: t != 6 && t != 255}}
			if err := codec.NewEncoder(&b, &hd).Encode(v); err != nil {
				fmt.Println("error", err)
				continue
			}
			fmt.Println(hex.EncodeToString(b.Bytes()))
		default:
			fmt.Println("error unknown request")
		}
	}
}
