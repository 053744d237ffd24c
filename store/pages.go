package store

// Page asks for part of a listing in ascending id: the records whose id is above
// After, at most Limit of them (0: all). A server streams a list that grows with the
// stored data one page at a time, each in its own short read, so that neither the
// list nor a transaction is held while a client reads the answer.
type Page struct {
	After uint64
	Limit int
}

// ListPageSize is the page size of the lists the server streams: a page of the
// largest records (a garden of 200-character names and a 100-character image path) is
// about 100 KiB in memory.
const ListPageSize = 200

// Full reports whether a page of n records may have more after it.
func (p Page) Full(n int) bool { return p.Limit > 0 && n >= p.Limit }

// ListPager pages through the lists whose length follows the stored data (the order
// of each is by id, as the whole-list methods).
type ListPager interface {
	CompaniesPage(p Page) ([]Company, error)
	CompaniesOfUserPage(userID uint64, p Page) ([]Company, error)
	GardensPage(p Page) ([]Garden, error)
	GardensVisibleToPage(userID uint64, p Page) ([]Garden, error)
	GardensOfCompanyPage(companyID uint64, p Page) ([]Garden, error)
	CompanyGardensVisibleToPage(companyID, userID uint64, p Page) ([]Garden, error)
	// The permission lists are by permission id.
	CompanyPermissionsPage(companyID uint64, p Page) ([]Permission, error)
	GardenPermissionsPage(gardenID uint64, p Page) ([]Permission, error)
}
