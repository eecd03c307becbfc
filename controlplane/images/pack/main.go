// pack writes image tarballs in the `docker save` layout, which `ctr images import` loads: one image per line of
// the list, each a single layer holding one static binary at /<binary>, run as the line's user.
//
//	pack -list images.txt -bin DIR -out images.tar
//
// A list line is: REFERENCE BINARY USER [ARG...] (the ARGs follow the binary in the image's entrypoint); '#'
// starts a comment. The tarball is reproducible: fixed times, sorted entries.
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
	flag.Parse()
	images, err := readList(*list)
	if err != nil {
		log.Fatal(err)
	}
	var blobs []blob
	var manifest []map[string]any
	for _, img := range images {
		content, err := os.ReadFile(filepath.Join(*bin, img.binary))
		if err != nil {
			log.Fatal(err)
		}
		layer := tarOf(map[string][]byte{img.binary: content})
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
	files := map[string][]byte{"manifest.json": manifestJSON}
	for _, b := range blobs {
		files[b.name] = b.data
	}
	if err := os.WriteFile(*out, tarOf(files), 0o644); err != nil {
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
		images = append(images, image{fields[0], fields[1], fields[2], append([]string{"/" + fields[1]}, fields[3:]...)})
	}
	return images, scanner.Err()
}

// tarOf packs files (name -> content) as a tar with sorted names, parent directories first, fixed times.
func tarOf(files map[string][]byte) []byte {
	var buffer bytes.Buffer
	writer := tar.NewWriter(&buffer)
	seen := map[string]bool{}
	for _, name := range sortedKeys(files) {
		if dir := filepath.Dir(name); dir != "." && !seen[dir] {
			seen[dir] = true
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
