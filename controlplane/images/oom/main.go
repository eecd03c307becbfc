// oom allocates memory in steps and touches every page until the kernel kills it for passing its cgroup's
// memory limit (OOMKilled). It never stops by itself short of --max.
package main

import (
	"flag"
	"log"
	"time"
)

func main() {
	step := flag.Int("step-mib", 16, "MiB allocated per step")
	maxMiB := flag.Int("max-mib", 4096, "stop growing past this (a safety net)")
	flag.Parse()
	var held [][]byte
	for total := 0; total < *maxMiB; total += *step {
		block := make([]byte, *step<<20)
		for i := 0; i < len(block); i += 4096 {
			block[i] = 1
		}
		held = append(held, block)
		log.Printf("oom: holding %d MiB", total+*step)
		time.Sleep(20 * time.Millisecond)
	}
	log.Printf("oom: reached the safety net with %d blocks", len(held))
	select {}
}
