-- The small order table the support example looks orders up in.
CREATE TABLE IF NOT EXISTS orders (
    number TEXT PRIMARY KEY,
    customer TEXT NOT NULL,
    status TEXT NOT NULL,
    detail TEXT NOT NULL,
    address TEXT NOT NULL
);
INSERT OR IGNORE INTO orders VALUES
    ('A-1001', 'Ada Lovelace', 'shipped', 'it left our warehouse on Monday and should arrive by Thursday', '12 St James Square, London'),
    ('A-1002', 'Alan Turing', 'processing', 'it is being packed and will ship within 2 business days', '78 High Street, Wilmslow'),
    ('A-1003', 'Grace Hopper', 'delivered', 'it was delivered on the 2nd and signed for at the front desk', '1 Navy Yard, Arlington'),
    ('A-1004', 'Katherine Johnson', 'cancelled', 'it was cancelled at your request and refunded in full', '3 Langley Road, Hampton');
