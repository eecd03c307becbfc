//go:build tools

// Pins promtool's module: build.sh builds github.com/prometheus/prometheus/cmd/promtool from it.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
