// pack writes image tarballs in the `docker save` layout, which `ctr images import` loads: one image per line of
// the list, each a single layer holding one static binary at /<binary>, run as the line's user.
//
//	pack -list images.txt -bin DIR -out images.tar
//	pack -image REFERENCE -user UID:GID -out image.tar -file /DEST=SOURCE... -- ENTRYPOINT...
//
// A list line is: REFERENCE BINARY USER [ARG...] (the ARGs follow the binary in the image's entrypoint); '#'
// starts a comment. The second form packs one image of several files (the real-node suite's image of the hook
// server: a Node binary, its shared libraries and dist/server.js). The tarball is reproducible: fixed times,
// sorted entries.
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

type image struct {
	reference  string
	binary     string
	user       string
	entrypoint []string
	// files of a -image image: path in the image (no leading slash) -> path here
	files map[string]string
}

type blob struct {
	name string
	data []byte
}

// epoch: every file and the image's creation time, so equal inputs give equal digests.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func main() {
	list := flag.String("list", "", "the image list")
	bin := flag.String("bin", "", "where the binaries are")
	out := flag.String("out", "", "the tarball to write")
	single := flag.String("image", "", "one image of -file files instead of a list")
	user := flag.String("user", "", "the -image image's user")
	files := map[string]string{}
	flag.Func("file", "/DEST=SOURCE: a file of the -image image", func(value string) error {
		dest, source, ok := strings.Cut(value, "=")
		if !ok || !strings.HasPrefix(dest, "/") {
			return fmt.Errorf("want /DEST=SOURCE, got %q", value)
		}
		files[strings.TrimPrefix(dest, "/")] = source
		return nil
	})
	flag.Parse()
	var images []image
	var err error
	if *single != "" {
		images = []image{{reference: *single, user: *user, entrypoint: flag.Args(), files: files}}
	} else if images, err = readList(*list); err != nil {
		log.Fatal(err)
	}
	var blobs []blob
	var manifest []map[string]any
	for _, img := range images {
		sources := img.files
		if sources == nil {
			sources = map[string]string{img.binary: filepath.Join(*bin, img.binary)}
		}
		contents := map[string][]byte{}
		for name, source := range sources {
			content, err := os.ReadFile(source)
			if err != nil {
				log.Fatal(err)
			}
			contents[name] = content
		}
		layer := tarOf(contents)
		layerDigest := digest(layer)
		config, _ := json.Marshal(map[string]any{
			"architecture": "amd64",
			"os":           "linux",
			"created":      epoch,
			"config":       map[string]any{"User": img.user, "Entrypoint": img.entrypoint, "Env": []string{"PATH=/"}, "WorkingDir": "/"},
			"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + layerDigest}},
		})
		configName := digest(config) + ".json"
		layerName := layerDigest + "/layer.tar"
		blobs = append(blobs, blob{configName, config}, blob{layerName, layer})
		manifest = append(manifest, map[string]any{"Config": configName, "RepoTags": []string{img.reference}, "Layers": []string{layerName}})
	}
	manifestJSON, _ := json.Marshal(manifest)
	entries := map[string][]byte{"manifest.json": manifestJSON}
	for _, b := range blobs {
		entries[b.name] = b.data
	}
	if err := os.WriteFile(*out, tarOf(entries), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "pack: %d images in %s\n", len(images), *out)
}

func readList(path string) ([]image, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var images []image
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		line, _, _ := strings.Cut(scanner.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 3 {
			return nil, fmt.Errorf("%s: %q: want REFERENCE BINARY USER [ARG...]", path, line)
		}
		images = append(images, image{reference: fields[0], binary: fields[1], user: fields[2], entrypoint: append([]string{"/" + fields[1]}, fields[3:]...)})
	}
	return images, scanner.Err()
}

// tarOf packs files (name -> content) as a tar with sorted names, every parent directory first, fixed times.
func tarOf(files map[string][]byte) []byte {
	var buffer bytes.Buffer
	writer := tar.NewWriter(&buffer)
	seen := map[string]bool{}
	for _, name := range sortedKeys(files) {
		var parents []string
		for dir := filepath.Dir(name); dir != "." && !seen[dir]; dir = filepath.Dir(dir) {
			seen[dir] = true
			parents = append([]string{dir}, parents...)
		}
		for _, dir := range parents {
			_ = writer.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX})
		}
		_ = writer.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: int64(len(files[name])), ModTime: epoch, Format: tar.FormatPAX})
		_, _ = writer.Write(files[name])
	}
	_ = writer.Close()
	return buffer.Bytes()
}

func sortedKeys(files map[string][]byte) []string {
	keys := make([]string, 0, len(files))
	for key := range files {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
