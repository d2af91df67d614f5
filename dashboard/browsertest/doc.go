// Package browsertest drives the dashboard in headless Chromium. It is a module of its
// own so that its browser driver (chromedp) stays out of the headgate module, whose only
// dependencies are go-redis, miniredis and msgpack.
package browsertest
