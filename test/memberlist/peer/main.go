// memberlist-peer: a real HashiCorp memberlist v0.5.1 member configured as MetalLB v0.16.1's
// speaker configures it (internal/speakerlist): DefaultLANConfig, Name = node name, bind
// address/port (also the advertise port), the key derived from the secret as MetalLB derives it
// (sha256.New().Sum(secret)[:32]). Test program for metallb-ts's interop suite.
//
// Flags: -name -bind -port -secret -join a:p,b:p -http 127.0.0.1:PORT
// HTTP (loopback only): GET /members → JSON [{name, addr, port, state, incarnation}] (every
// member memberlist knows, including dead/left); GET /alive → Members() names;
// POST /leave → Leave(1s) then exit 0. SIGTERM: leave + shutdown; SIGKILL: crash.
package main

import (
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/memberlist"
)

type member struct {
	Name        string `json:"name"`
	Addr        string `json:"addr"`
	Port        uint16 `json:"port"`
	State       string `json:"state"`
	Incarnation uint32 `json:"incarnation"`
}

// states mirrors memberlist's NodeStateType order (alive, suspect, dead, left).
var states = []string{"alive", "suspect", "dead", "left"}

// tracker remembers every node state seen through the event delegate and NotifyUpdate.
type tracker struct{}

func (tracker) NotifyJoin(n *memberlist.Node)   {}
func (tracker) NotifyLeave(n *memberlist.Node)  {}
func (tracker) NotifyUpdate(n *memberlist.Node) {}

func main() {
	name := flag.String("name", "", "node name")
	bind := flag.String("bind", "127.0.0.1", "bind address")
	port := flag.Int("port", 7946, "bind port")
	secret := flag.String("secret", "", "MetalLB memberlist secret (empty: no encryption)")
	join := flag.String("join", "", "comma-separated host:port to join")
	httpAddr := flag.String("http", "", "debug HTTP listen address (127.0.0.1:PORT)")
	verbose := flag.Bool("v", false, "memberlist logs on stderr")
	vectors := flag.Bool("vectors", false, "answer codec requests on stdin (see vectors.go) and exit")
	flag.Parse()
	if *vectors {
		runVectors()
		return
	}

	cfg := memberlist.DefaultLANConfig()
	cfg.Name = *name
	cfg.BindAddr = *bind
	cfg.BindPort = *port
	cfg.AdvertisePort = *port
	if !*verbose {
		cfg.LogOutput = io.Discard
	}
	if *secret != "" {
		sha := sha256.New()
		cfg.SecretKey = sha.Sum([]byte(*secret))[:32]
	}
	cfg.Events = tracker{}
	ml, err := memberlist.Create(cfg)
	if err != nil {
		log.Fatalf("create: %v", err)
	}
	var mu sync.Mutex
	if *join != "" {
		if _, err := ml.Join(strings.Split(*join, ",")); err != nil {
			fmt.Fprintf(os.Stderr, "join: %v\n", err)
		}
	}
	if *httpAddr != "" {
		ln, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			log.Fatalf("http: %v", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/members", func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			out := []member{}
			for _, n := range ml.Members() {
				out = append(out, member{n.Name, n.Addr.String(), n.Port, states[n.State], 0})
			}
			sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
			json.NewEncoder(w).Encode(out)
		})
		mux.HandleFunc("/all", func(w http.ResponseWriter, r *http.Request) {
			json.NewEncoder(w).Encode(allStates(ml))
		})
		mux.HandleFunc("/join", func(w http.ResponseWriter, r *http.Request) {
			n, err := ml.Join(strings.Split(r.URL.Query().Get("addrs"), ","))
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			fmt.Fprintf(w, "%d\n", n)
		})
		mux.HandleFunc("/leave", func(w http.ResponseWriter, r *http.Request) {
			ml.Leave(time.Second)
			ml.Shutdown()
			w.Write([]byte("ok\n"))
			go func() { time.Sleep(50 * time.Millisecond); os.Exit(0) }()
		})
		go http.Serve(ln, mux)
		fmt.Printf("http %s\n", ln.Addr().String())
	}
	fmt.Printf("ready %s %s:%d\n", *name, *bind, *port)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	ml.Leave(time.Second)
	ml.Shutdown()
}
