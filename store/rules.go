package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"
)

// The rules every backend applies before and while it writes, exported so that
// store/postgres says exactly what the bbolt methods say.

// ValidateNewUser applies the account rules to the input of CreateUser.
func ValidateNewUser(in NewUser) error {
	v := &ValidationError{}
	if msg := ValidateUsername(in.Username); msg != "" {
		v.Add("username", msg)
	}
	if msg := ValidateName(in.FirstName); msg != "" {
		v.Add("first_name", "first_name "+msg)
	}
	if msg := ValidateName(in.LastName); msg != "" {
		v.Add("last_name", "last_name "+msg)
	}
	if msg := ValidateEmail(in.Email); msg != "" {
		v.Add("email", msg)
	}
	if in.PasswordHash == "" {
		v.Add("password", "password is required")
	}
	return v.OrNil()
}

// ValidateUserUpdate applies the account rules to the fields UpdateUser changes.
func ValidateUserUpdate(up UserUpdate) error {
	v := &ValidationError{}
	if up.Username != nil {
		if msg := ValidateUsername(*up.Username); msg != "" {
			v.Add("username", msg)
		}
	}
	if up.FirstName != nil {
		if msg := ValidateName(*up.FirstName); msg != "" {
			v.Add("first_name", "first_name "+msg)
		}
	}
	if up.LastName != nil {
		if msg := ValidateName(*up.LastName); msg != "" {
			v.Add("last_name", "last_name "+msg)
		}
	}
	if up.Email != nil {
		if msg := ValidateEmail(*up.Email); msg != "" {
			v.Add("email", msg)
		}
	}
	return v.OrNil()
}

// UsernameTaken is the conflict of a username another user has.
func UsernameTaken(username string) error {
	return fmt.Errorf("%w: username %q is already taken", ErrConflict, username)
}

// ValidateTokenDigest refuses the digest that every malformed token maps to: storing
// it would let any garbage token authenticate.
func ValidateTokenDigest(digest [DigestSize]byte) error {
	if digest == sha256.Sum256(nil) {
		return fmt.Errorf("%w: token must be %d random bytes in hex", ErrInvalid, TokenSize)
	}
	return nil
}

// ValidateWidgets checks a widgets document: one JSON value of at most
// MaxWidgetsBytes.
func ValidateWidgets(doc []byte) error {
	switch {
	case len(bytes.TrimSpace(doc)) == 0:
		return Invalid("body", "the body must be a JSON value; it is empty")
	case len(doc) > MaxWidgetsBytes:
		return Invalid("body", fmt.Sprintf("widgets must be at most %d bytes", MaxWidgetsBytes))
	case !json.Valid(doc):
		return Invalid("body", "the body is not valid JSON")
	}
	return nil
}

// ValidatePermissionRequest checks the body of a permission change; level is nil for
// a removal.
func ValidatePermissionRequest(username string, level *Level) error {
	return checkPermRequest(username, level)
}

// OwnPermission is the refusal to change one's own permission.
func OwnPermission() error {
	return fmt.Errorf("%w: you cannot change or remove your own permission; ask another admin", ErrForbidden)
}

// UnknownPermissionUser is the invalid username of a permission change.
func UnknownPermissionUser(username string) error {
	return Invalid("username", fmt.Sprintf("unknown user %q", username))
}

// LastAdmin is the refusal to take the admin letter from a company's last admin.
func LastAdmin(username string, companyID uint64) error {
	return fmt.Errorf("%w: %q is the last admin of company %d; make another user admin first", ErrForbidden, username, companyID)
}

// BedUUIDTaken is the conflict of a project uuid the garden has a bed for.
func BedUUIDTaken(gardenID uint64, uuid string) error {
	return fmt.Errorf("%w: garden %d already has a bed with uuid %s", ErrConflict, gardenID, uuid)
}

// ValidateCloudKey checks the project and cloud uuids of a queue item or position.
func ValidateCloudKey(project, cloud string) error { return checkJobKey(project, cloud) }

// ProjectGone is CompleteCloudJob's answer for a project no bed refers to any more.
func ProjectGone(project string) error {
	return fmt.Errorf("%w: no bed refers to project %s any more", ErrNotFound, project)
}

// ValidateClaim checks the node and lease of ClaimCloudJobs and RenewCloudClaim.
func ValidateClaim(node string, lease time.Duration) error { return checkClaim(node, lease) }

// ValidateImageRecord checks the input of SetGardenImage.
func ValidateImageRecord(path string, cs Coordinates) error {
	if err := cs.Validate(); err != nil {
		return err
	}
	if path == "" {
		return Invalid("image_path", "image path is required")
	}
	return nil
}
