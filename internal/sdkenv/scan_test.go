// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package sdkenv

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// readers returns, for one environment, every reader Scan is tested through:
// whole, a byte at a time, in halves, with io.EOF along the last data, in
// chunks of 3 and 4095 bytes (prefixes and values straddle reads and the
// end of Scan's buffer).
func readers(env string) map[string]io.Reader {
	return map[string]io.Reader{
		"whole":   strings.NewReader(env),
		"onebyte": iotest.OneByteReader(strings.NewReader(env)),
		"half":    iotest.HalfReader(strings.NewReader(env)),
		"dataerr": iotest.DataErrReader(strings.NewReader(env)),
		"chunk3":  &chunkReader{s: env, n: 3},
		"chunk4k": &chunkReader{s: env, n: bufSize - 1},
	}
}

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	s string
	n int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.n)], r.s)
	r.s = r.s[n:]
	return n, nil
}

func TestScan(t *testing.T) {
	pad := "PAD=" + strings.Repeat("p", bufSize-10) + "\x00" // moves what follows across the buffer's end
	tests := []struct {
		name     string
		env      string
		maxValue int // 0: 4096, -1: 0
		want     Vars
		tooLarge []string // variables named by an ErrTooLarge error
	}{
		{name: "empty", env: ""},
		{name: "neither", env: "PATH=/bin\x00HOME=/root\x00"},
		{
			name: "both",
			env:  "PATH=/bin\x00OTEL_SERVICE_NAME=checkout\x00HOME=/\x00OTEL_RESOURCE_ATTRIBUTES=a=b,c=d\x00",
			want: Vars{ServiceName: "checkout", ResourceAttributes: "a=b,c=d", HasServiceName: true, HasResourceAttributes: true},
		},
		{name: "empty value", env: "OTEL_SERVICE_NAME=\x00", want: Vars{HasServiceName: true}},
		{name: "no trailing NUL", env: "A=b\x00OTEL_SERVICE_NAME=svc", want: Vars{ServiceName: "svc", HasServiceName: true}},
		{name: "no trailing NUL, empty value", env: "A=b\x00OTEL_SERVICE_NAME=", want: Vars{HasServiceName: true}},
		{name: "cut in prefix", env: "A=b\x00OTEL_SERVICE_NAM"},
		{name: "no =", env: "OTEL_SERVICE_NAME\x00OTEL_RESOURCE_ATTRIBUTES\x00"},
		{
			name: "look-alikes",
			env: "OTEL_SERVICE_NAMES=x\x00XOTEL_SERVICE_NAME=x\x00otel_service_name=x\x00OTEL_SERVICE_NAME_X=x\x00" +
				"OTEL_RESOURCE_ATTRIBUTES_X=x\x00OTEL_RESOURCE=x\x00 OTEL_SERVICE_NAME=x\x00OTEL_\x00OTEL_SERVICE_NAM\x00",
		},
		{name: "NUL inside a prefix", env: "OTEL_SERV\x00OTEL_SERVICE_NAME=x\x00", want: Vars{ServiceName: "x", HasServiceName: true}},
		{name: "value with =", env: "OTEL_SERVICE_NAME=a=b==\x00", want: Vars{ServiceName: "a=b==", HasServiceName: true}},
		{name: "raw bytes kept", env: "OTEL_SERVICE_NAME=\xff\x01 x\x00", want: Vars{ServiceName: "\xff\x01 x", HasServiceName: true}},
		{name: "empty entries", env: "\x00\x00OTEL_SERVICE_NAME=x\x00\x00\x00", want: Vars{ServiceName: "x", HasServiceName: true}},
		{
			name: "duplicates: first wins",
			env:  "OTEL_SERVICE_NAME=first\x00OTEL_RESOURCE_ATTRIBUTES=a=1\x00OTEL_SERVICE_NAME=second\x00OTEL_RESOURCE_ATTRIBUTES=a=2\x00",
			want: Vars{ServiceName: "first", ResourceAttributes: "a=1", HasServiceName: true, HasResourceAttributes: true},
		},
		{
			name: "duplicate of a too long value stays absent",
			env:  "OTEL_SERVICE_NAME=toolong\x00OTEL_SERVICE_NAME=ok\x00", maxValue: 5,
			tooLarge: []string{ServiceNameVar},
		},
		{
			name: "too long value, other kept",
			env:  "OTEL_SERVICE_NAME=abcd\x00OTEL_RESOURCE_ATTRIBUTES=a=b\x00", maxValue: 3,
			want:     Vars{ResourceAttributes: "a=b", HasResourceAttributes: true},
			tooLarge: []string{ServiceNameVar},
		},
		{
			name: "too long without trailing NUL",
			env:  "OTEL_RESOURCE_ATTRIBUTES=abcd", maxValue: 3,
			tooLarge: []string{ResourceAttributesVar},
		},
		{name: "exactly maxValue", env: "OTEL_SERVICE_NAME=abc\x00", maxValue: 3, want: Vars{ServiceName: "abc", HasServiceName: true}},
		{name: "maxValue 0, empty value", env: "OTEL_SERVICE_NAME=\x00OTEL_RESOURCE_ATTRIBUTES=", maxValue: -1, want: Vars{HasServiceName: true, HasResourceAttributes: true}},
		{name: "maxValue 0", env: "OTEL_SERVICE_NAME=a\x00OTEL_RESOURCE_ATTRIBUTES=", maxValue: -1, want: Vars{HasResourceAttributes: true}, tooLarge: []string{ServiceNameVar}},
		{
			name: "both too long",
			env:  "OTEL_SERVICE_NAME=abcd\x00OTEL_RESOURCE_ATTRIBUTES=abcd\x00", maxValue: 3,
			tooLarge: []string{ServiceNameVar, ResourceAttributesVar},
		},
		{
			name: "across the buffer's end",
			env:  pad + "OTEL_SERVICE_NAME=" + strings.Repeat("s", 100) + "\x00" + pad + "OTEL_RESOURCE_ATTRIBUTES=a=b",
			want: Vars{ServiceName: strings.Repeat("s", 100), ResourceAttributes: "a=b", HasServiceName: true, HasResourceAttributes: true},
		},
		{
			name:     "long value",
			env:      "OTEL_RESOURCE_ATTRIBUTES=" + strings.Repeat("k=v,", 3000) + "\x00",
			maxValue: 12000,
			want:     Vars{ResourceAttributes: strings.Repeat("k=v,", 3000), HasResourceAttributes: true},
		},
	}
	for _, tt := range tests {
		maxValue := tt.maxValue // 0: 4096, -1: 0
		switch maxValue {
		case 0:
			maxValue = 4096
		case -1:
			maxValue = 0
		}
		for rname, r := range readers(tt.env) {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				got, err := Scan(r, maxValue)
				assert.Equal(t, tt.want, got)
				if tt.env == "" {
					require.ErrorIs(t, err, ErrEmpty)
					return
				}
				if len(tt.tooLarge) == 0 {
					require.NoError(t, err)
					return
				}
				require.ErrorIs(t, err, ErrTooLarge)
				for _, name := range tt.tooLarge {
					assert.Contains(t, err.Error(), name+": value longer than "+strconv.Itoa(maxValue)+" bytes: sdkenv: too large")
				}
			})
		}
	}
}

// envReader generates an environment: head, then "FILLER=xxx...\0"
// entries for ever (or until size bytes), counting what was read.
type envReader struct {
	head string
	size int // 0: no end
	read int
}

func (r *envReader) Read(p []byte) (int, error) {
	if r.size > 0 && r.read >= r.size {
		return 0, io.EOF
	}
	if r.size > 0 {
		p = p[:min(len(p), r.size-r.read)]
	}
	for i := range p {
		switch j := r.read + i; {
		case j < len(r.head):
			p[i] = r.head[j]
		case (j-len(r.head))%100 == 99:
			p[i] = 0
		default:
			p[i] = 'x'
		}
	}
	r.read += len(p)
	return len(p), nil
}

func TestScanMaxEnvironment(t *testing.T) {
	t.Run("exceeded", func(t *testing.T) {
		r := &envReader{head: "OTEL_SERVICE_NAME=svc\x00"}
		v, err := Scan(r, 100)
		require.ErrorIs(t, err, ErrTooLarge)
		assert.EqualError(t, err, "environment longer than 2097152 bytes: sdkenv: too large")
		assert.Equal(t, Vars{ServiceName: "svc", HasServiceName: true}, v)
		assert.LessOrEqual(t, r.read, MaxEnvironment+1)
	})
	t.Run("value cut at the limit is discarded", func(t *testing.T) {
		r := &envReader{head: strings.Repeat("A=b\x00", MaxEnvironment/4-2) + "OTEL_SERVICE_NAME=svc"}
		v, err := Scan(r, 100)
		require.ErrorIs(t, err, ErrTooLarge)
		assert.Equal(t, Vars{}, v)
	})
	t.Run("exactly MaxEnvironment", func(t *testing.T) {
		head := "OTEL_SERVICE_NAME=svc\x00"
		r := &envReader{head: head, size: MaxEnvironment - len("OTEL_RESOURCE_ATTRIBUTES=a=b")}
		env, err := io.ReadAll(r)
		require.NoError(t, err)
		env = append(env, "OTEL_RESOURCE_ATTRIBUTES=a=b"...)
		require.Len(t, env, MaxEnvironment)
		// The FILLER entries end in NUL every 100 bytes; make sure the
		// last one does before the variable.
		env[len(env)-len("OTEL_RESOURCE_ATTRIBUTES=a=b")-1] = 0
		v, err := Scan(bytes.NewReader(env), 100)
		require.NoError(t, err)
		assert.Equal(t, Vars{ServiceName: "svc", ResourceAttributes: "a=b", HasServiceName: true, HasResourceAttributes: true}, v)
		_, err = Scan(bytes.NewReader(append(env, 'x')), 100)
		require.ErrorIs(t, err, ErrTooLarge)
	})
}

func TestScanReadErrors(t *testing.T) {
	boom := errors.New("boom")
	t.Run("error keeps complete values", func(t *testing.T) {
		r := io.MultiReader(strings.NewReader("OTEL_SERVICE_NAME=svc\x00OTEL_RESOURCE_ATTRIBUTES=a=b,c"), iotest.ErrReader(boom))
		v, err := Scan(r, 100)
		require.ErrorIs(t, err, boom)
		assert.EqualError(t, err, "read environment: boom")
		assert.Equal(t, Vars{ServiceName: "svc", HasServiceName: true}, v) // the cut value is discarded
	})
	t.Run("stops once both are found", func(t *testing.T) {
		r := io.MultiReader(strings.NewReader("OTEL_RESOURCE_ATTRIBUTES=a=b\x00OTEL_SERVICE_NAME=svc\x00"), iotest.ErrReader(boom))
		v, err := Scan(r, 100)
		require.NoError(t, err)
		assert.Equal(t, Vars{ServiceName: "svc", ResourceAttributes: "a=b", HasServiceName: true, HasResourceAttributes: true}, v)
	})
	t.Run("no progress", func(t *testing.T) {
		_, err := Scan(emptyReader{}, 100)
		require.ErrorIs(t, err, io.ErrNoProgress)
	})
	t.Run("timeout reader", func(t *testing.T) {
		// Returns the first read, then iotest.ErrTimeout.
		v, err := Scan(iotest.TimeoutReader(strings.NewReader("OTEL_SERVICE_NAME=svc\x00A=b")), 100)
		require.ErrorIs(t, err, iotest.ErrTimeout)
		assert.Equal(t, Vars{ServiceName: "svc", HasServiceName: true}, v)
	})
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

// TestScanProcess reads the environment of a real process.
func TestScanProcess(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep:", err)
	}
	cmd := exec.Command(sleep, "30")
	cmd.Env = []string{
		"PATH=/usr/bin:/bin",
		"OTEL_SERVICE_NAME=proc-test",
		"DB_PASSWORD=hunter2",
		"OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=test,team=a%2Cb",
	}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	path := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/environ"
	// cmd.Start returns once execve closed the child's close-on-exec pipe,
	// but the kernel sets the new environment's bounds (mm->env_start,
	// env_end) only after that, when it loads the binary: until then
	// environ reads empty.
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(path)
		return err != nil || len(b) > 0
	}, 10*time.Second, time.Millisecond)
	f, err := os.Open(path)
	if err != nil {
		t.Skip("environ not readable:", err)
	}
	defer f.Close()
	v, err := Scan(f, 4096)
	require.NoError(t, err)
	assert.Equal(t, Vars{
		ServiceName: "proc-test", HasServiceName: true,
		ResourceAttributes: "deployment.environment.name=test,team=a%2Cb", HasResourceAttributes: true,
	}, v)
	m := pcommon.NewMap()
	require.NoError(t, v.Resource(m))
	assert.Equal(t, map[string]any{"service.name": "proc-test", "deployment.environment.name": "test", "team": "a,b"}, m.AsRaw())
}

// typicalEnv is a 3 KiB environment of a service in a container.
func typicalEnv(withVars bool) []byte {
	entries := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOSTNAME=checkout-7d9f8b6c5d-x2x7k", "HOME=/root", "LANG=C.UTF-8", "TERM=xterm",
		"LS_COLORS=" + strings.Repeat("di=01;34:ln=01;36:so=01;35:", 40),
		"KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443", "KUBERNETES_PORT=tcp://10.96.0.1:443",
		"JAVA_OPTS=-Xms512m -Xmx2g -XX:+UseG1GC -Dfile.encoding=UTF-8",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://otel-collector:4317", "OTEL_TRACES_SAMPLER=parentbased_always_on",
		"DB_PASSWORD=hunter2", "API_TOKEN=" + strings.Repeat("t", 64),
	}
	for len(strings.Join(entries, "\x00")) < 3000 {
		entries = append(entries, "CHECKOUT_SERVICE_PORT_8080_TCP_ADDR=10.96.12.34")
	}
	if withVars {
		entries = append(entries, "OTEL_SERVICE_NAME=checkout",
			"OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=prod,service.version=1.4.2,k8s.pod.name=checkout-7d9f8b6c5d-x2x7k")
	}
	return []byte(strings.Join(entries, "\x00") + "\x00")
}

func BenchmarkScan(b *testing.B) {
	for _, bc := range []struct {
		name     string
		withVars bool
	}{{"absent", false}, {"present", true}} {
		b.Run(bc.name, func(b *testing.B) {
			env := typicalEnv(bc.withVars)
			r := bytes.NewReader(env)
			b.SetBytes(int64(len(env)))
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(env)
				v, err := Scan(r, 4096)
				if err != nil || v.HasServiceName != bc.withVars {
					b.Fatal(v, err)
				}
			}
		})
	}
}
