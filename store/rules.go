package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// The rules every backend applies before and while it writes, in one place, so that
// store/bolt and store/postgres say exactly the same thing: each backend calls these
// and only adds what its storage itself must check (a name taken, a row gone).

// PrepareNewUser is the input of CreateUser as it is stored: the username normalised
// (NormalizeUsername), every field valid, a password hash present.
func PrepareNewUser(in NewUser) (NewUser, error) {
	in.Username = NormalizeUsername(in.Username)
	if err := in.Validate(); err != nil {
		return NewUser{}, err
	}
	if in.PasswordHash == "" {
		return NewUser{}, Invalid("password", "password is required")
	}
	return in, nil
}

// PrepareUserUpdate is the input of UpdateUser as it is applied: the fields valid and
// a new username normalised.
func PrepareUserUpdate(up UserUpdate) (UserUpdate, error) {
	if err := up.Validate(); err != nil {
		return UserUpdate{}, err
	}
	if up.Username != nil {
		name := NormalizeUsername(*up.Username)
		up.Username = &name
	}
	return up, nil
}

// UsernameTaken is the conflict of a username another user has.
func UsernameTaken(username string) error {
	return fmt.Errorf("%w: username %q is already taken", ErrConflict, username)
}

// UsernameLooksTaken is the conflict of a username that looks like another user's
// (the same UsernameSkeleton).
func UsernameLooksTaken(username string) error {
	return fmt.Errorf("%w: username %q looks like an existing account's; choose another", ErrConflict, username)
}

// AccountChanged is the conflict of an update made with UserUpdate.IfUnchanged after
// the username or the credentials changed.
func AccountChanged() error {
	return fmt.Errorf("%w: the account's username or password changed while this request was handled; send it again", ErrConflict)
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
// MaxWidgetsBytes, in UTF-8 (RFC 8259: json.Valid alone lets invalid UTF-8 inside
// strings through, which would then be served labelled charset=utf-8).
func ValidateWidgets(doc []byte) error { return validateWidgets(doc, "the body") }

// validateWidgets is ValidateWidgets naming the document what (an import's record is
// "the document").
func validateWidgets(doc []byte, what string) error {
	switch {
	case len(bytes.TrimSpace(doc)) == 0:
		return Invalid("body", what+" must be a JSON value; it is empty")
	case len(doc) > MaxWidgetsBytes:
		return Invalid("body", fmt.Sprintf("widgets must be at most %d bytes", MaxWidgetsBytes))
	case !utf8.Valid(doc):
		return Invalid("body", fmt.Sprintf("%s is not valid UTF-8 (byte %d); send JSON text in UTF-8", what, invalidUTF8At(doc)))
	case !json.Valid(doc):
		return Invalid("body", what+" is not valid JSON")
	}
	return nil
}

// invalidUTF8At is the offset of the first byte of b that is not valid UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// ValidatePermissionRequest checks the body of a permission change; level is nil for
// a removal.
func ValidatePermissionRequest(username string, level *Level) error {
	v := &ValidationError{}
	if msg := ValidateUsername(username); msg != "" {
		v.Add("username", msg)
	}
	if level != nil {
		if msg := level.problem(); msg != "" {
			v.Add("permission", msg)
		}
	}
	return v.OrNil()
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

// TooManyBeds is the refusal of a bed beyond CreateBedUpTo's limit.
func TooManyBeds(gardenID uint64, has, maxBeds int) error {
	return fmt.Errorf("%w (garden %d has %d, at most %d)", ErrTooManyBeds, gardenID, has, maxBeds)
}

// ValidateCloudKey checks the project and cloud uuids of a queue item or position.
func ValidateCloudKey(project, cloud string) error {
	if !ValidUUID(project) || !ValidUUID(cloud) {
		return Invalid("uuid", fmt.Sprintf("project %q and cloud %q must be spatial-server uuids", project, cloud))
	}
	return nil
}

// ValidateCloudInputs checks the key and the inputs of a queue item or position: the
// frame the spatial server named must be text a store keeps (a repaired one would
// never equal the server's again).
func ValidateCloudInputs(project, cloud string, in CloudInputs) error {
	if err := ValidateCloudKey(project, cloud); err != nil {
		return err
	}
	if msg := textProblem(in.Frame); msg != "" {
		return Invalid("frame", fmt.Sprintf("the frame of cloud %s %s", cloud, msg))
	}
	return nil
}

// ProjectGone is CompleteCloudJob's answer for a project no bed refers to any more.
func ProjectGone(project string) error {
	return fmt.Errorf("%w: no bed refers to project %s any more", ErrNotFound, project)
}

// PreparePosition is a computed position as CompleteCloudJob stores it: its inputs
// valid (ValidateCloudInputs) and its reason, which may quote an error, made text a
// store keeps (RepairText).
func PreparePosition(p PlantPosition) (PlantPosition, error) {
	if err := ValidateCloudInputs(p.Project, p.Cloud, p.CloudInputs); err != nil {
		return PlantPosition{}, err
	}
	p.Reason, _ = RepairText(p.Reason)
	return p, nil
}

// ValidateClaim checks the node and lease of ClaimCloudJobs and RenewCloudClaim.
func ValidateClaim(node string, lease time.Duration) error {
	v := &ValidationError{}
	if node == "" {
		v.Add("node", "node is required: the name of the node claiming jobs")
	} else if msg := textProblem(node); msg != "" {
		v.Add("node", "node "+msg)
	}
	if lease <= 0 {
		v.Add("lease", "lease must be positive")
	}
	return v.OrNil()
}

// ValidateNode checks the node of ReleaseCloudClaims.
func ValidateNode(node string) error {
	if node == "" {
		return Invalid("node", "node is required: the name of the node releasing its jobs")
	}
	if msg := textProblem(node); msg != "" {
		return Invalid("node", "node "+msg)
	}
	return nil
}

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

// NoImage is GardenImage's answer for a garden without image.
func NoImage(gardenID uint64) error {
	return fmt.Errorf("%w: garden %d has no image", ErrNotFound, gardenID)
}
