// probe is both a target and a prober for the isolation tests.
//
//	probe                       serve: TCP on $TCP_PORTS (default 8080,9090), each connection gets "probe <port>\n";
//	                            UDP echo on $UDP_PORTS (default 9053); with $PROBE_TARGETS set, from the moment it
//	                            starts, check those every 20 ms for $PROBE_SECONDS (default 3) and print one line
//	                            "PROBE <json>": per target, how many attempts reached it and when the last one
//	                            that did started (ms since the process started, and Unix ms), with the process's
//	                            start in Unix ms: code that runs at start vs the node's firewall
//	probe check TARGET...       try each target, print one JSON report: {"results":[{target,reached,answer|error}]}
//	probe until SECONDS TARGET  try TARGET every 20 ms until it is reached (or SECONDS pass); print when, as JSON
//	                            {reached, reachedAtMs (Unix ms: when the first successful attempt started),
//	                            attempts, answer|error}: how soon a path opened
//	probe id                    print who the process runs as and what confines it (JSON)
//	probe net                   print the pod's interfaces (name, MAC, every address, IPv6 included), the kernel's
//	                            disable_ipv6 for all, default and eth0, what writing 0 into all's answered, and the
//	                            IPv4 neighbours it learned (JSON)
//
// A target is [label=]tcp:HOST:PORT (reached: the connection was accepted), [label=]udp:HOST:PORT (reached: an
// answer came back to "ping"; an IPv6 HOST in brackets, with its zone for a link-local one: [fe80::1%eth0]:8080)
// or [label=]dns:NAME (reached: the resolver of /etc/resolv.conf answered with
// addresses). A refused or timed-out attempt is not reached; its error says which.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

type result struct {
	Target  string `json:"target"`
	Reached bool   `json:"reached"`
	Answer  string `json:"answer,omitempty"`
	Error   string `json:"error,omitempty"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "check" {
		report(check(os.Args[2:], timeout()))
		return
	}
	if len(os.Args) == 4 && os.Args[1] == "until" {
		printJSON(until(os.Args[2], os.Args[3]))
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "id" {
		printJSON(identity())
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "net" {
		printJSON(network())
		return
	}
	serve()
}

func timeout() time.Duration {
	if value, err := time.ParseDuration(os.Getenv("PROBE_TIMEOUT")); err == nil {
		return value
	}
	return 2 * time.Second
}

func report(results []result) {
	printJSON(map[string]any{"results": results})
}

func printJSON(value any) {
	out, _ := json.Marshal(value)
	fmt.Println(string(out))
}

func check(targets []string, limit time.Duration) []result {
	results := make([]result, len(targets))
	var wg sync.WaitGroup
	for i, target := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = checkOne(target, limit)
		}()
	}
	wg.Wait()
	return results
}

// until starts an attempt every 20 ms, each on its own (a connection to an address nothing answers yet waits for
// its timeout, and must not hide the moment the path opens), and reports the start of the first that succeeded.
func until(seconds, target string) map[string]any {
	limit, err := time.ParseDuration(seconds + "s")
	if err != nil {
		return map[string]any{"reached": false, "error": err.Error()}
	}
	type success struct {
		startedAt int64
		attempt   int
		answer    string
	}
	won := make(chan success, 1)
	deadline := time.Now().Add(limit)
	var lastError sync.Map
	for attempt := 1; time.Now().Before(deadline); attempt++ {
		startedAt := time.Now().UnixMilli()
		go func() {
			out := checkOne(target, 500*time.Millisecond)
			if !out.Reached {
				lastError.Store("error", out.Error)
				return
			}
			select {
			case won <- success{startedAt, attempt, out.Answer}:
			default:
			}
		}()
		select {
		case first := <-won:
			return map[string]any{"reached": true, "reachedAtMs": first.startedAt, "attempts": first.attempt, "answer": first.answer}
		case <-time.After(20 * time.Millisecond):
		}
	}
	last, _ := lastError.Load("error")
	return map[string]any{"reached": false, "error": last}
}

func checkOne(target string, limit time.Duration) result {
	label, spec := target, target
	if at := strings.Index(target, "="); at >= 0 {
		label, spec = target[:at], target[at+1:]
	}
	kind, address, _ := strings.Cut(spec, ":")
	out := result{Target: label}
	var err error
	switch kind {
	case "tcp":
		out.Answer, err = dialTCP(address, limit)
	case "udp":
		out.Answer, err = pingUDP(address, limit)
	case "dns":
		out.Answer, err = lookup(address, limit)
	default:
		err = fmt.Errorf("unknown target kind %q", kind)
	}
	if err != nil {
		out.Error = err.Error()
	} else {
		out.Reached = true
	}
	return out
}

func dialTCP(address string, limit time.Duration) (string, error) {
	conn, err := net.DialTimeout("tcp", address, limit)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	// A banner, when the service sends one at once; none (a TLS server) is still a connection.
	_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	buffer := make([]byte, 128)
	n, _ := conn.Read(buffer)
	return strings.TrimSpace(string(buffer[:n])), nil
}

func pingUDP(address string, limit time.Duration) (string, error) {
	conn, err := net.Dial("udp", address)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(limit))
	if _, err := conn.Write([]byte("ping")); err != nil {
		return "", err
	}
	buffer := make([]byte, 128)
	n, err := conn.Read(buffer)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(buffer[:n])), nil
}

func lookup(name string, limit time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	addresses, err := net.DefaultResolver.LookupHost(ctx, name)
	if err != nil {
		return "", err
	}
	return strings.Join(addresses, ","), nil
}

func serve() {
	for _, port := range ports("TCP_PORTS", "8080,9090") {
		listener, err := net.Listen("tcp", ":"+port)
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			for {
				conn, err := listener.Accept()
				if err != nil {
					log.Fatal(err)
				}
				fmt.Fprintf(conn, "probe %s\n", port)
				conn.Close()
			}
		}()
	}
	for _, port := range ports("UDP_PORTS", "9053") {
		packets, err := net.ListenPacket("udp", ":"+port)
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			buffer := make([]byte, 512)
			for {
				_, from, err := packets.ReadFrom(buffer)
				if err != nil {
					log.Fatal(err)
				}
				_, _ = packets.WriteTo([]byte("probe udp "+port+"\n"), from)
			}
		}()
	}
	log.Printf("probe: serving as uid %d gid %d", os.Getuid(), os.Getgid())
	if targets := strings.Fields(os.Getenv("PROBE_TARGETS")); len(targets) > 0 {
		fmt.Print("PROBE ")
		printJSON(map[string]any{"startedAtMs": started.UnixMilli(), "startup": watchFromStart(targets)})
	}
	select {}
}

// started is when the process began (startup checks count from there).
var started = time.Now()

type window struct {
	Attempts      int   `json:"attempts"`
	Reached       int   `json:"reached"`
	LastReachedMs int64 `json:"lastReachedMs"`
	// LastReachedAtMs: the same moment in Unix ms (-1: never reached), to set beside the node's other clocks.
	LastReachedAtMs int64 `json:"lastReachedAtMs"`
}

// watchFromStart checks the targets every 20 ms for $PROBE_SECONDS, from the process's start.
func watchFromStart(targets []string) map[string]*window {
	seconds, err := time.ParseDuration(os.Getenv("PROBE_SECONDS") + "s")
	if err != nil {
		seconds = 3 * time.Second
	}
	windows := map[string]*window{}
	for _, target := range targets {
		label, _, _ := strings.Cut(target, "=")
		windows[label] = &window{LastReachedMs: -1, LastReachedAtMs: -1}
	}
	for time.Since(started) < seconds {
		now := time.Now()
		at := now.Sub(started).Milliseconds()
		for _, out := range check(targets, 200*time.Millisecond) {
			w := windows[out.Target]
			w.Attempts++
			if out.Reached {
				w.Reached++
				w.LastReachedMs = at
				w.LastReachedAtMs = now.UnixMilli()
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return windows
}

func ports(variable, fallback string) []string {
	value := os.Getenv(variable)
	if value == "" {
		value = fallback
	}
	return strings.FieldsFunc(value, func(r rune) bool { return r == ',' || r == ' ' })
}
