# SPDX-License-Identifier: MIT
# The bundled example of `make demo`: a small "shop" whose methods each do
# something StackPulse can see — read files, burn CPU, talk to a local
# server, resolve a name, run a child process — so that
#   sp-record -- ruby shop.rb | sp-correlate | sp-tree
# shows which method did what, and how much CPU it took.
require "socket"

class Catalog
  def load(path)
    File.readlines(path).map(&:split)
  end

  def price_all(items)
    items.map { |name, _| checksum(name * 20_000) }
  end

  private

  def checksum(text)
    text.each_byte.reduce(0) { |sum, b| (sum * 31 + b) & 0xffffffff }
  end
end

class Inventory
  def initialize(port)
    @port = port
  end

  def sync
    sock = TCPSocket.new("127.0.0.1", @port)
    sock.write("SYNC\n")
    sock.close
  end
end

class Shop
  def initialize(catalog_path)
    @catalog_path = catalog_path
    @server = TCPServer.new("127.0.0.1", 0)
  end

  def run
    items = Catalog.new.load(@catalog_path)
    Catalog.new.price_all(items)
    Inventory.new(@server.addr[1]).sync
    lookup_supplier
    archive_receipts
  end

  def lookup_supplier
    Addrinfo.getaddrinfo("localhost", 80, nil, :STREAM)
  rescue SocketError
    nil
  end

  def archive_receipts
    system("/bin/sh", "-c", "echo receipts > /dev/null")
  end
end

catalog = ARGV[0] || File.join(__dir__, "catalog.txt")
Shop.new(catalog).run
