// cat prints files, as the usual cat does (and says "No such file or directory" as it does): the image the
// real-node suite runs scripts/check-pod-ipv6.sh with, in place of the small public image an operator would use.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

func main() {
	status := 0
	for _, name := range os.Args[1:] {
		content, err := os.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "cat: %s: No such file or directory\n", name)
			status = 1
			continue
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "cat: %s: %v\n", name, err)
			status = 1
			continue
		}
		os.Stdout.Write(content)
	}
	os.Exit(status)
}
