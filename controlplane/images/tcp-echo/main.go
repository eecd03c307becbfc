// tcp-echo is a raw TCP service: it greets every connection with a banner line, then echoes what it reads.
// The port is $PORT (default 9000).
package main

import (
	"io"
	"log"
	"net"
	"os"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "9000"
	}
	listener, err := net.Listen("tcp", ":"+port)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("tcp-echo: listening on :%s", port)
	for {
		conn, err := listener.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			defer conn.Close()
			if _, err := io.WriteString(conn, "tcp-echo ready\n"); err != nil {
				return
			}
			_, _ = io.Copy(conn, conn)
		}()
	}
}
