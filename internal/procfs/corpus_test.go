// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import (
	"strings"
	"testing"

	"github.com/processctx/otelcol-processctx/internal/fuzzseed"
)

// TestSeedCorpus keeps the committed seed corpora of this package's fuzz
// targets (testdata/fuzz/<FuzzName>) in step with the seeds below, on top
// of the f.Add seeds of each target (see internal/fuzzseed).
func TestSeedCorpus(t *testing.T) {
	t.Run("FuzzCgroup", func(t *testing.T) {
		seeds := map[string][]any{}
		// One real sample per runtime and layout; FuzzCgroup adds them all.
		for _, file := range []string{
			"containerd-v1-systemd-burstable.txt", "containerd-v2-systemd-guaranteed.txt",
			"containerd-v2-cgroupfs-besteffort.txt", "crio-v2-systemd-guaranteed-crun.txt",
			"crio-hybrid-systemd-conmon-system-slice.txt", "docker-v1-cgroupfs.txt", "docker-v2-systemd.txt",
			"dockershim-v1-systemd-guaranteed.txt", "podman-v1-cgroupfs-rootful.txt",
			"podman-v2-systemd-rootless.txt", "host-v2-user-session.txt", "systemd-service-v2-containerd-shim.txt",
		} {
			seeds["sample-"+strings.TrimSuffix(file, ".txt")] = []any{readCgroupSample(t, file)}
		}
		const id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		for name, data := range map[string]string{
			"id-63-hex":            "0::/system.slice/docker-" + id[:63] + ".scope\n",
			"id-uppercase":         "0::/docker/" + strings.ToUpper(id) + "\n",
			"id-twice":             "0::/docker/" + id + "/docker/" + strings.Replace(id, "0", "f", 1) + "\n",
			"pod-uid-underscores":  "0::/kubepods.slice/kubepods-pod7f1d2c3b_4a5e_6f70_8192_a3b4c5d6e7f8.slice/cri-containerd-" + id + ".scope\n",
			"pod-uid-short":        "0::/kubepods/pod7f1d2c3b-4a5e-6f70-8192-a3b4c5d6e7f\n",
			"pod-without-kubepods": "0::/pod7f1d2c3b-4a5e-6f70-8192-a3b4c5d6e7f8/" + id + "\n",
			"no-newline":           "0::/docker/" + id,
			"nul-bytes":            "0::/docker/\x00" + id + "\x00\n",
			"only-colons":          "::::\n\n::\n",
		} {
			seeds[name] = []any{[]byte(data)}
		}
		fuzzseed.Check(t, "FuzzCgroup", seeds)
	})
	t.Run("FuzzParseStatLine", func(t *testing.T) {
		seeds := map[string][]any{}
		for name, data := range map[string]string{
			// Real lines (Linux 6.x): init, and a process with every field.
			"init": "1 (systemd) S 0 1 1 0 -1 4194560 69243 160873879 0 67998 1131 3002 380765 153294 20 0 1 0 23 " +
				"42225664 2898 18446744073709551615 1 1 0 0 0 0 671173123 4096 1260 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
			"full": "19996 (head) R 19991 19991 29370 0 -1 4194304 105 0 0 0 0 0 0 0 20 0 1 0 1259909 2998272 404 " +
				"18446744073709551615 94696052273152 94696052297257 140733321598688 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 " +
				"94696052313104 94696052314720 94696294014976 140733321603759 140733321603787 140733321603787 140733321605098 0\n",
			"kernel-thread":    statOf(2, "kthreadd", 'S', 0, 0),
			"comm-parens":      statOf(4242, "a) (b", 'S', 1, 987654),
			"comm-spaces":      statOf(4242, "Web Content", 'S', 1, 987654),
			"comm-newline":     statOf(4242, "x\ny", 'S', 1, 987654),
			"comm-empty":       statOf(4242, "", 'S', 1, 987654),
			"zombie":           statOf(4242, "defunct", 'Z', 1, 987654),
			"start-max":        statOf(4242, "x", 'S', 1, 1<<64-1),
			"start-overflow":   strings.Replace(statOf(4242, "x", 'S', 1, 7), " 7", " 18446744073709551616", 1),
			"truncated":        statOf(4242, "x", 'S', 1, 987654)[:40],
			"no-closing-paren": "4242 (x S 1 2 3",
			"negative-ppid":    statOf(4242, "x", 'S', -1, 987654),
			"empty":            "",
		} {
			seeds[name] = []any{[]byte(data)}
		}
		fuzzseed.Check(t, "FuzzParseStatLine", seeds)
	})
}
