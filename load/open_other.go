//go:build !unix

package load

// Without O_NOFOLLOW a file root is still checked to be the file that was
// listed (os.SameFile) after it is opened.
const oNoFollow = 0

func isLoop(error) bool { return false }
