// Package mariadbtest gives tests that need MariaDB a database of their
// own on the server QUARRY_TEST_MARIADB_DSN names, dropped when the test
// ends with the fragment account the store made for it.
package mariadbtest

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// URLEnv names the MariaDB server the integration tests use, as a
// mariadb://USER@HOST:PORT/DATABASE URL.
const URLEnv = "QUARRY_TEST_MARIADB_DSN"

var seq atomic.Int64

// URL is the server's URL, or a skip saying how to get one.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(URLEnv)
	if u == "" {
		t.Skipf("%s is not set: run `. scripts/mariadb.sh; mariadb_up` (MariaDB 11.8 in a chroot) to test against a live server", URLEnv)
	}
	return u
}

// Fresh creates an empty database on the server base names and returns
// its mariadb:// URL.
func Fresh(t testing.TB, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	c := mysql.NewConfig()
	c.Net, c.Addr = "tcp", u.Host
	if u.User != nil {
		c.User = u.User.Username()
		c.Passwd, _ = u.User.Password()
	}
	c.Timeout = 10 * time.Second
	dsn := c.FormatDSN()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := fmt.Sprintf("quarry_test_%d_%d", os.Getpid(), seq.Add(1))
	if _, err := db.Exec("DROP DATABASE IF EXISTS " + name); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if db, err := sql.Open("mysql", dsn); err == nil {
			db.Exec("DROP DATABASE IF EXISTS " + name)
			db.Exec("DROP USER IF EXISTS '" + FragmentUser(name) + "'@'%'")
			db.Close()
		}
	})
	u.Path = "/" + name
	return strings.TrimSuffix(u.String(), "?")
}

// FragmentUser is the fragment account the MariaDB store makes for a
// database (store/mariadb's fragmentUser: the two must agree).
func FragmentUser(database string) string {
	sum := sha256.Sum256([]byte(database))
	return "qf_" + hex.EncodeToString(sum[:8])
}
