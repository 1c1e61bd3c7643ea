package mariadb_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/quarry-rag/quarry/store"
	"github.com/quarry-rag/quarry/store/mariadb"
	"github.com/quarry-rag/quarry/store/storetest"
)

// serverURL is the test server's URL, or a skip saying how to get one.
func serverURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("QUARRY_TEST_MARIADB_DSN")
	if u == "" {
		t.Skip("QUARRY_TEST_MARIADB_DSN is not set: run `. scripts/mariadb.sh; mariadb_up` (MariaDB 11.8 in a chroot) to test against a live server")
	}
	return u
}

var dbSeq atomic.Int64

// fresh creates an empty database on the server and returns its URL.
func fresh(t *testing.T, base string) string {
	t.Helper()
	dsn, err := mariadb.DSN(base)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := fmt.Sprintf("quarry_test_%d_%d", os.Getpid(), dbSeq.Add(1))
	if _, err := db.Exec("DROP DATABASE IF EXISTS " + name); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if db, err := sql.Open("mysql", dsn); err == nil {
			db.Exec("DROP DATABASE IF EXISTS " + name)
			db.Close()
		}
	})
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u := "mariadb://" + cfg.User
	if cfg.Passwd != "" {
		u += ":" + cfg.Passwd
	}
	return u + "@" + cfg.Addr + "/" + name
}

func TestStoreConformance(t *testing.T) {
	base := serverURL(t)
	storetest.Run(t, func(t *testing.T) *store.Store {
		s, err := store.Open(context.Background(), fresh(t, base))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
