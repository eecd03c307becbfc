// crash exits at once with status 1: a container that crash-loops.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "crash: exiting at once, as this test image does")
	os.Exit(1)
}
