// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package otep

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// SPEC.md's payload test vector.
const specPayload = "0a1e0a1c0a0c736572766963652e6e616d65120c0a0a6d792d73657276696365122e0a1a7468726561646c6f63616c2e736368656d615f76657273696f6e12100a0e746c73646573635f76315f646576"

func TestEncodeSpecVector(t *testing.T) {
	res := pcommon.NewMap()
	res.PutStr("service.name", "my-service")
	attrs := pcommon.NewMap()
	attrs.PutStr("threadlocal.schema_version", "tlsdesc_v1_dev")
	b, err := Encode(res, attrs)
	require.NoError(t, err)
	assert.Equal(t, specPayload, hex.EncodeToString(b))
}
