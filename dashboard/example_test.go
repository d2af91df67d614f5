package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/headgate/headgate"
	"github.com/headgate/headgate/dashboard"
)

// The dashboard mounted under /admin/queues of an application's own server, with actions
// allowed for the operators its Authorize names.
func Example_mount() {
	mr, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	store, err := headgate.NewStore(rdb, &headgate.StoreConfig{Namespace: "example"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := store.Enqueue(context.Background(), headgate.Envelope{ID: "1", Kind: "email", Queue: "mail"}); err != nil {
		log.Fatal(err)
	}

	h, err := dashboard.New(rdb, &dashboard.Config{
		Namespace:    "example",
		AllowActions: true,
		Authorize: func(r *http.Request, action dashboard.Action) (string, error) {
			user := r.Header.Get("X-Operator") // set by the application's own login
			if user == "" && action != dashboard.ActionView {
				return "", errors.New("only operators act")
			}
			return user, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/admin/queues/", http.StripPrefix("/admin/queues", h))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	res, err := http.Get(srv.URL + "/admin/queues/")
	if err != nil {
		log.Fatal(err)
	}
	page, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.StatusCode, strings.Contains(string(page), `href="/admin/queues/queues/mail/available"`))

	res, err = http.Post(srv.URL+"/admin/queues/queues/mail/pause", "application/x-www-form-urlencoded", nil)
	if err != nil {
		log.Fatal(err)
	}
	res.Body.Close()
	fmt.Println(res.StatusCode)
	// Output:
	// 200 true
	// 403
}
