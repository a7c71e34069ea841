package pgbackend

import (
	"errors"
	"fmt"
	"strings"
)

// Every TCP connection of a communicator starts with a handshake in which
// both ends prove the job secret (HMAC over fresh nonces, transport/tcp).
// The secret comes from the caller (the PyTorch backend: a random one that
// rank 0 publishes through the rendezvous store) or from the launcher's
// environment, so that it never passes through the store. Without one a
// communicator accepts anyone who reaches its ports, so that takes an
// explicit request: the option auth=none.

// JobSecretEnv is the variable a launcher sets on every rank to hand them
// the job secret.
const JobSecretEnv = "HCCL_GO_JOB_SECRET"

// authOption is the options-string key that asks for an unauthenticated
// communicator (auth=none; the default is auth=secret). It has no
// environment variable: turning authentication off is a per-call decision.
const authOption = "auth"

func parseAuth(c *Config, v string) error {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "secret", "":
		c.Unauthenticated = false
	case "none":
		c.Unauthenticated = true
	default:
		return fmt.Errorf("%q: want secret or none", v)
	}
	return nil
}

// errNoSecret is what a communicator without a secret, and without auth=none, fails with.
var errNoSecret = errors.New("the job secret is empty: pass the same non-empty secret on every rank, " +
	"set " + JobSecretEnv + " on every rank, or ask for an unauthenticated communicator with the option auth=none")

// JobSecret returns the secret a communicator's handshakes prove: explicit
// if it is set, else HCCL_GO_JOB_SECRET from lookup. With unauthenticated
// (auth=none) it returns an empty secret and refuses one given explicitly,
// since asking for both is a mistake either way.
func JobSecret(explicit string, lookup func(string) (string, bool), unauthenticated bool) ([]byte, error) {
	if unauthenticated {
		if explicit != "" {
			return nil, errors.New("auth=none and a job secret both given: pass one or the other")
		}
		return nil, nil
	}
	if explicit != "" {
		return []byte(explicit), nil
	}
	if v, ok := lookup(JobSecretEnv); ok && v != "" {
		return []byte(v), nil
	}
	return nil, errNoSecret
}
