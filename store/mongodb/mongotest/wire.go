package mongotest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// MongoDB's wire protocol opcodes the fake speaks.
const (
	opReply = 1
	opQuery = 2004
	opMsg   = 2013
)

// maxMessage bounds a message, as maxMessageSizeBytes tells the driver.
const maxMessage = 48_000_000

// message is a request as read off the wire: its id, whether it came as
// OP_QUERY (the driver's first handshake) and its command, with OP_MSG's
// document sequences folded in as arrays.
type message struct {
	id     int32
	legacy bool
	cmd    bson.D
}

func readMessage(r *bufio.Reader) (message, error) {
	var hdr [16]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return message{}, err
	}
	size := int32(binary.LittleEndian.Uint32(hdr[0:]))
	m := message{id: int32(binary.LittleEndian.Uint32(hdr[4:]))}
	op := int32(binary.LittleEndian.Uint32(hdr[12:]))
	if size < 16 || size > maxMessage {
		return m, fmt.Errorf("message of %d bytes", size)
	}
	body := make([]byte, size-16)
	if _, err := io.ReadFull(r, body); err != nil {
		return m, err
	}
	switch op {
	case opQuery:
		m.legacy = true
		// flags, full collection name, skip, return, query.
		i := 4 + bytes.IndexByte(body[4:], 0) + 1 + 8
		if i < 13 || i > len(body) {
			return m, errors.New("short OP_QUERY")
		}
		doc, err := readDoc(body[i:])
		if err != nil {
			return m, err
		}
		m.cmd = doc
		return m, nil
	case opMsg:
		flags := binary.LittleEndian.Uint32(body)
		rest := body[4:]
		if flags&1 != 0 { // checksumPresent
			rest = rest[:len(rest)-4]
		}
		for len(rest) > 0 {
			kind := rest[0]
			rest = rest[1:]
			switch kind {
			case 0:
				doc, err := readDoc(rest)
				if err != nil {
					return m, err
				}
				m.cmd = append(m.cmd, doc...)
				rest = rest[docLen(rest):]
			case 1:
				n := int(binary.LittleEndian.Uint32(rest))
				if n > len(rest) || n < 5 {
					return m, errors.New("bad document sequence")
				}
				seq := rest[4:n]
				rest = rest[n:]
				end := bytes.IndexByte(seq, 0)
				name := string(seq[:end])
				seq = seq[end+1:]
				var docs bson.A
				for len(seq) > 0 {
					doc, err := readDoc(seq)
					if err != nil {
						return m, err
					}
					docs = append(docs, doc)
					seq = seq[docLen(seq):]
				}
				m.cmd = append(m.cmd, bson.E{Key: name, Value: docs})
			default:
				return m, fmt.Errorf("OP_MSG section kind %d", kind)
			}
		}
		return m, nil
	}
	return m, fmt.Errorf("opcode %d is not spoken here", op)
}

func docLen(b []byte) int { return int(binary.LittleEndian.Uint32(b)) }

func readDoc(b []byte) (bson.D, error) {
	if len(b) < 5 || docLen(b) > len(b) {
		return nil, errors.New("short BSON document")
	}
	var d bson.D
	if err := bson.Unmarshal(b[:docLen(b)], &d); err != nil {
		return nil, err
	}
	return d, nil
}

// writeReply answers a request in the form it came in.
func writeReply(w io.Writer, reqID, id int32, legacy bool, reply bson.D) error {
	doc, err := bson.Marshal(reply)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.Write(make([]byte, 16))
	op := int32(opMsg)
	if legacy {
		op = opReply
		// responseFlags, cursorID, startingFrom, numberReturned.
		binary.Write(&buf, binary.LittleEndian, int32(0))
		binary.Write(&buf, binary.LittleEndian, int64(0))
		binary.Write(&buf, binary.LittleEndian, int32(0))
		binary.Write(&buf, binary.LittleEndian, int32(1))
	} else {
		binary.Write(&buf, binary.LittleEndian, uint32(0))
		buf.WriteByte(0)
	}
	buf.Write(doc)
	out := buf.Bytes()
	binary.LittleEndian.PutUint32(out[0:], uint32(len(out)))
	binary.LittleEndian.PutUint32(out[4:], uint32(id))
	binary.LittleEndian.PutUint32(out[8:], uint32(reqID))
	binary.LittleEndian.PutUint32(out[12:], uint32(op))
	_, err = w.Write(out)
	return err
}

// serveConn answers one connection's requests in order until it closes.
func (s *Server) serveConn(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	var next int32
	for {
		m, err := readMessage(r)
		if err != nil {
			return
		}
		reply := s.command(m.cmd)
		next++
		if err := writeReply(c, m.id, next, m.legacy, reply); err != nil {
			return
		}
	}
}
