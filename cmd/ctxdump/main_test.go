package main

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/procmem"
	"github.com/processctx/otelcol-processctx/internal/publisher"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

func TestMain(m *testing.M) { os.Exit(pubtest.Main(m)) }

func TestScanListsPublishers(t *testing.T) {
	goPub := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	goPub.Publish(publisher.EncodeStrings(map[string]string{"service.name": "dump-go"}))
	cPub := pubtest.Start(t, pubtest.C, pubtest.Options{Separate: true})
	cPub.Publish(publisher.EncodeStrings(map[string]string{"service.name": "dump-c"}))

	fs, err := procmem.NewFS("/")
	require.NoError(t, err)
	reader, err := procmem.NewReader(fs, procmem.DefaultLimits())
	require.NoError(t, err)
	var out, errOut bytes.Buffer
	seen := map[int]uint64{}
	require.NoError(t, scan(&out, &errOut, reader, procmem.NewIdentityReader(fs), 0, seen, true))

	found := map[int]entry{}
	dec := json.NewDecoder(&out)
	for dec.More() {
		var e entry
		require.NoError(t, dec.Decode(&e))
		found[e.PID] = e
	}
	require.Contains(t, found, goPub.Pid)
	require.Contains(t, found, cPub.Pid)
	assert.Equal(t, "dump-go", found[goPub.Pid].Resource["service.name"])
	assert.Equal(t, "dump-c", found[cPub.Pid].Resource["service.name"])
	assert.Equal(t, "go-publisher", found[goPub.Pid].Executable)
	assert.NotEmpty(t, found[cPub.Pid].CreationTime)

	// Watch mode prints only what changed.
	out.Reset()
	goPub.Update(publisher.EncodeStrings(map[string]string{"service.name": "dump-go-2"}))
	require.NoError(t, scan(&out, &errOut, reader, procmem.NewIdentityReader(fs), 0, seen, true))
	var e entry
	require.NoError(t, json.NewDecoder(&out).Decode(&e))
	assert.Equal(t, goPub.Pid, e.PID)
	assert.Equal(t, "dump-go-2", e.Resource["service.name"])
}
