// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import (
	"bufio"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
)

// maxOwnerCacheEntries bounds the uid → user name cache of an
// IdentityReader; the cache is cleared when it is full.
const maxOwnerCacheEntries = 4096

// ownerCache maps uids to user names, bounded by maxOwnerCacheEntries.
type ownerCache struct {
	// lookup returns the user name of uid, and false when it has none.
	lookup func(uid int) (string, bool)

	mu    sync.Mutex
	names map[int]string
}

// owner returns the user name of uid, or uid in decimal when it has none.
func (c *ownerCache) owner(uid int) string {
	c.mu.Lock()
	name, ok := c.names[uid]
	c.mu.Unlock()
	if ok {
		return name
	}
	// Look up outside the lock: a name service may be slow.
	name, ok = c.lookup(uid)
	if !ok {
		name = strconv.Itoa(uid)
	}
	c.mu.Lock()
	if c.names == nil || len(c.names) >= maxOwnerCacheEntries {
		c.names = make(map[int]string)
	}
	c.names[uid] = name
	c.mu.Unlock()
	return name
}

// lookupUserName looks uid up with os/user (the reader's own user database).
func lookupUserName(uid int) (string, bool) {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil || u.Username == "" {
		return "", false
	}
	return u.Username, true
}

// lookupPasswdFile looks uid up in a passwd(5) file.
func lookupPasswdFile(path string, uid int) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	return lookupPasswd(f, uid)
}

// lookupPasswd returns the name of the first entry "name:password:uid:..."
// of a passwd(5) file with the given uid.
func lookupPasswd(f io.Reader, uid int) (string, bool) {
	want := strconv.Itoa(uid)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '+' || line[0] == '-' {
			continue
		}
		name, rest, ok := strings.Cut(line, ":")
		if !ok || name == "" {
			continue
		}
		_, rest, ok = strings.Cut(rest, ":") // password
		if !ok {
			continue
		}
		id, _, _ := strings.Cut(rest, ":")
		if id == want {
			return name, true
		}
	}
	return "", false
}
