// registry is the real-node suite's image registry and the pusher that fills it: go-containerregistry's registry
// (pkg/registry: the OCI distribution API, blobs in memory) behind HTTP basic auth for the repositories under a
// private prefix, served on the node's loopback inside the suite's network namespace. Tests only: never the product.
//
//	registry serve -addr 127.0.0.1:5000 [-private PREFIX=USER:PASSWORD ...]
//	registry push -registry 127.0.0.1:5000 -tar images.tar -from REFERENCE [-unique] [-user U -password P] REPO:TAG...
//
// serve answers every repository under a private prefix (`alice/`) only to a request with that prefix's user and
// password (401 with a Basic challenge otherwise, as a registry that needs credentials does); every other
// repository is public. push copies the image REFERENCE of a `docker save` tarball (the test images' images.tar)
// to each REPO:TAG and prints `REPO:TAG DIGEST` per line; with -unique each copy gets a layer of its own (the
// image's files and /.copy naming the copy), so that pulling it is a cold pull even after another copy was pulled:
// no layer of it is on the node before.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: registry serve|push [flags]")
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "push":
		err = push(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (serve or push)", os.Args[1])
	}
	if err != nil {
		log.Fatal(err)
	}
}

type private struct{ prefix, user, password string }

func serve(args []string) error {
	flags := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := flags.String("addr", "127.0.0.1:5000", "where to listen (plain HTTP)")
	var privates []private
	flags.Func("private", "PREFIX=USER:PASSWORD: repositories under PREFIX answer only to USER and PASSWORD", func(value string) error {
		prefix, credentials, ok := strings.Cut(value, "=")
		user, password, ok2 := strings.Cut(credentials, ":")
		if !ok || !ok2 || prefix == "" || user == "" || password == "" {
			return fmt.Errorf("want PREFIX=USER:PASSWORD, got %q", value)
		}
		privates = append(privates, private{prefix, user, password})
		return nil
	})
	_ = flags.Parse(args)
	handler := registry.New(registry.Logger(log.New(os.Stderr, "registry: ", log.LstdFlags)))
	server := &http.Server{Addr: *addr, Handler: guarded(handler, privates), ReadHeaderTimeout: 10 * time.Second}
	log.Printf("registry: serving %s (%d private prefixes)", *addr, len(privates))
	return server.ListenAndServe()
}

// guarded lets a request for a repository under a private prefix through only with that prefix's credentials.
// The blob store is shared by every repository (pkg/registry keys blobs by digest alone): a test registry, where
// the private images' layers are their own (push -unique) and nobody guesses a digest.
func guarded(next http.Handler, privates []private) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		repository := strings.TrimPrefix(r.URL.Path, "/v2/")
		for _, p := range privates {
			if !strings.HasPrefix(repository, p.prefix) {
				continue
			}
			user, password, ok := r.BasicAuth()
			if !ok || !equal(user, p.user) || !equal(password, p.password) {
				log.Printf("registry: %s %s refused (credentials %s)", r.Method, r.URL.Path, map[bool]string{true: "wrong", false: "missing"}[ok])
				w.Header().Set("WWW-Authenticate", `Basic realm="challenge-hooks-test"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func push(args []string) error {
	flags := flag.NewFlagSet("push", flag.ExitOnError)
	host := flags.String("registry", "127.0.0.1:5000", "the registry (plain HTTP)")
	tarPath := flags.String("tar", "", "a `docker save` tarball")
	from := flags.String("from", "", "the image's reference in the tarball")
	unique := flags.Bool("unique", false, "give each copy a layer of its own")
	user := flags.String("user", "", "basic auth user")
	password := flags.String("password", "", "basic auth password")
	_ = flags.Parse(args)
	if *tarPath == "" || *from == "" || flags.NArg() == 0 {
		return errors.New("usage: registry push -tar FILE -from REFERENCE [-unique] [-user U -password P] REPO:TAG...")
	}
	tag, err := name.NewTag(*from)
	if err != nil {
		return err
	}
	image, err := tarball.ImageFromPath(*tarPath, &tag)
	if err != nil {
		return fmt.Errorf("%s in %s: %w", *from, *tarPath, err)
	}
	auth := authn.Anonymous
	if *user != "" {
		auth = &authn.Basic{Username: *user, Password: *password}
	}
	for _, target := range flags.Args() {
		ref, err := name.ParseReference(*host+"/"+target, name.Insecure)
		if err != nil {
			return err
		}
		copied := image
		if *unique {
			if copied, err = withOwnLayer(image, target); err != nil {
				return err
			}
		}
		if err := remote.Write(ref, copied, remote.WithAuth(auth)); err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
		digest, err := copied.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s %s\n", target, digest)
	}
	return nil
}

// withOwnLayer: the image with its layers merged into one holding its files and /.copy (the copy's name), and its
// configuration (user, entrypoint, platform) kept.
func withOwnLayer(image v1.Image, copyName string) (v1.Image, error) {
	layers, err := image.Layers()
	if err != nil {
		return nil, err
	}
	var buffer bytes.Buffer
	writer := tar.NewWriter(&buffer)
	for _, layer := range layers {
		content, err := layer.Uncompressed()
		if err != nil {
			return nil, err
		}
		reader := tar.NewReader(content)
		for {
			header, err := reader.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			if err := writer.WriteHeader(header); err != nil {
				return nil, err
			}
			if _, err := io.Copy(writer, reader); err != nil {
				return nil, err
			}
		}
		_ = content.Close()
	}
	mark := []byte(copyName + "\n")
	epoch := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := writer.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: ".copy", Mode: 0o644, Size: int64(len(mark)), ModTime: epoch}); err != nil {
		return nil, err
	}
	_, _ = writer.Write(mark)
	if err := writer.Close(); err != nil {
		return nil, err
	}
	data := buffer.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		return nil, err
	}
	copied, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	original, err := image.ConfigFile()
	if err != nil {
		return nil, err
	}
	config, err := copied.ConfigFile()
	if err != nil {
		return nil, err
	}
	config = config.DeepCopy()
	config.Architecture, config.OS, config.Created, config.Config = original.Architecture, original.OS, original.Created, original.Config
	return mutate.ConfigFile(copied, config)
}
