// http-app answers every HTTP request with a fixed body naming itself ("<name>\n"), so a client can tell it
// reached this app and not something else on the port. --delay makes it a slow starter: it listens only after
// that many seconds. The port is $PORT (default 8080).
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"
)

func main() {
	name := flag.String("name", "http-app", "the body's text")
	delay := flag.Duration("delay", 0, "wait this long before listening")
	flag.Parse()
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	if *delay > 0 {
		log.Printf("%s: listening in %s", *name, *delay)
		time.Sleep(*delay)
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "%s\n", *name)
	})
	log.Printf("%s: listening on :%s as uid %d gid %d", *name, port, os.Getuid(), os.Getgid())
	log.Fatal(http.ListenAndServe(":"+port, nil))
}
